//! `brisvox-bench v2v --sim --transports call,webrtc` places its calls in
//! turn over `/call` and over WebRTC (the offer to `/webrtc/offer`, Opus on
//! loopback UDP, the shared `brisvox_testkit::webrtc::Caller`) against one
//! server; every turn of both is answered and measured, and the report sets
//! the two side by side with their ratio.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn webrtc_and_call_are_measured_in_turn_and_side_by_side() {
    let dir = std::env::temp_dir().join(format!("brisvox-bench-webrtc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = dir.join("out");
    let agent = root().join("bench/agents/mock-no-models.toml");
    let fixture = root().join("fixtures/phone_pls_hold_while_try_16k.wav");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args(["v2v", "--sim", "--agent", agent.to_str().unwrap()])
        .args([
            "--transports",
            "call,webrtc",
            "--runs",
            "2",
            "--linger-ms",
            "500",
        ])
        .args(["--fixture", fixture.to_str().unwrap()])
        .args(["--out", stem.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(stem.with_extension("json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["summary"]["failed_calls"], 0, "{}", json["calls"]);
    assert_eq!(
        json["summary"]["outcomes"]["answered"], 2,
        "{}",
        json["calls"]
    );
    let transports: Vec<&str> = json["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["transport"].as_str().unwrap())
        .collect();
    assert_eq!(transports, ["call", "webrtc"]);
    let rtc = &json["calls"][1];
    assert_eq!(rtc["end_reason"], "client_end", "{rtc}");
    assert!(rtc["frames_sent"].as_u64().unwrap() > 100, "{rtc}");
    // The agent's floor: VAD stop 128 + STT final 150 + LLM 350 + TTS 150.
    let v2v = rtc["turns"][0]["v2v_ms"].as_f64().unwrap();
    assert!(v2v >= 778.0, "WebRTC V2V {v2v} ms under the mock floor");
    assert!(!rtc["turn_metrics"].as_array().unwrap().is_empty(), "{rtc}");
    let side = &json["side_by_side"];
    assert!(side["ratio_p50"].as_f64().unwrap() > 0.0, "{side}");
    assert_eq!(side["paired_diff_ms"]["n"], 1, "{side}");
    let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    assert!(md.contains("## Transports side by side"), "{md}");
    assert!(md.contains("WebRTC / `/call`: p50 ratio"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}
