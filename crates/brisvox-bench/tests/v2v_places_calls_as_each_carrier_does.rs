//! `brisvox-bench v2v --sim --route /<carrier>` places its calls on the
//! brisvox server (in process, behind its real websocket) as that carrier
//! does: Telnyx in A-law (JSON text, base64 payloads, marks) and Vonage in
//! 16 kHz linear PCM (binary frames, notify). Each call's turn is answered
//! and measured; a format the carrier does not stream is refused up front.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bench(route: &str, extra: &[&str], fixture: &str, stem: &Path) -> std::process::Output {
    let agent = root().join("bench/agents/mock-no-models.toml");
    let fixture = root().join("fixtures").join(fixture);
    std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args(["v2v", "--sim", "--agent", agent.to_str().unwrap()])
        .args(["--route", route])
        .args(extra)
        .args(["--fixture", fixture.to_str().unwrap()])
        .args(["--runs", "1", "--linger-ms", "500"])
        .args(["--out", stem.to_str().unwrap()])
        .output()
        .unwrap()
}

fn answered(route: &str, extra: &[&str], fixture: &str, wire: &str) {
    let dir = tempfile_dir(route);
    let stem = dir.join("out");
    let out = bench(route, extra, fixture, &stem);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{route}: {stderr}");
    let text = std::fs::read_to_string(stem.with_extension("json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let summary = &json["summary"];
    assert_eq!(summary["failed_calls"], 0, "{route}: {summary}");
    assert_eq!(summary["outcomes"]["answered"], 1, "{route}: {summary}");
    let call = &json["calls"][0];
    assert!(call["error"].is_null(), "{route}: {call}");
    assert!(call["bot_audio_messages"].as_u64().unwrap() > 0, "{call}");
    let v2v = call["turns"][0]["v2v_ms"].as_f64().unwrap();
    // The agent's floor: VAD stop 128 + STT final 150 + LLM 350 + TTS 150.
    assert!(v2v >= 778.0, "{route}: V2V {v2v} ms under the mock floor");
    assert_eq!(json["wire"].as_str().unwrap(), wire);
    let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    assert!(md.contains(wire), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(route: &str) -> PathBuf {
    let name = format!(
        "brisvox-bench-carrier-{}-{}",
        route.trim_start_matches('/'),
        std::process::id()
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_telnyx_call_in_alaw_is_answered_and_measured() {
    answered(
        "/telnyx",
        &["--codec", "alaw"],
        "phone_pls_hold_while_try_8k.wav",
        "- wire: /telnyx placed as the carrier places it (its opening, media and mark echoes), alaw at 8000 Hz",
    );
}

#[test]
fn a_vonage_call_in_16_khz_linear_pcm_is_answered_and_measured() {
    answered(
        "/vonage",
        &[],
        "phone_pls_hold_while_try_16k.wav",
        "- wire: /vonage placed as the carrier places it (its opening, media and mark echoes), pcm16 at 16000 Hz",
    );
}

#[test]
fn a_format_the_carrier_does_not_stream_is_refused_before_any_call() {
    let dir = tempfile_dir("twilio-alaw");
    let stem = dir.join("out");
    let out = bench(
        "/twilio",
        &["--codec", "alaw"],
        "phone_pls_hold_while_try_8k.wav",
        &stem,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/twilio does not stream alaw at 8000 Hz"),
        "{stderr}"
    );
    assert!(!stem.with_extension("json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
