//! `brisvox-bench v2v --sim` starts the brisvox server in process with the
//! benchmark agent of mock providers (energy VAD, always-complete verdict),
//! plays a real fixture over the websocket, and reports answered turns, the
//! floor computed from the agent file, V2V minus that floor and the engine's
//! own hops from `turn_metrics`.

use std::path::Path;

#[test]
fn v2v_sim_answers_and_reports_the_floor_and_the_hops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fixture = root.join("fixtures/en_two_utterances.wav");
    let agent = root.join("bench/agents/mock-no-models.toml");
    let dir = std::env::temp_dir().join(format!("brisvox-bench-v2v-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = dir.join("out");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args(["v2v", "--sim", "--agent", agent.to_str().unwrap()])
        .args(["--fixture", fixture.to_str().unwrap()])
        .args(["--runs", "1", "--linger-ms", "500"])
        .args(["--out", stem.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stem.with_extension("json")).unwrap())
            .unwrap();
    let summary = &json["summary"];
    assert_eq!(summary["failed_calls"], 0, "{summary}");
    let answered = summary["outcomes"]["answered"].as_u64().unwrap();
    assert!(answered >= 1, "{summary}");

    // 100 ms of silence is 4 VAD windows (128 ms) + final 150 + LLM 350 + TTS 150.
    let floor = &json["sim"]["server"]["floor"];
    assert_eq!(floor["total_ms"], 778, "{floor}");
    let excess = &json["sim"]["excess_over_floor"];
    assert_eq!(excess["turns"].as_array().unwrap().len() as u64, answered);
    let p50 = excess["summary_ms"]["p50"].as_f64().unwrap();
    let v2v_p50 = summary["v2v_ms"]["p50"].as_f64().unwrap();
    assert!((v2v_p50 - 778.0 - p50).abs() < 1e-6, "excess = V2V - floor");

    let llm = &json["engine_hops"]["hops"]["turn_end_to_llm_ms"];
    let audio = &json["engine_hops"]["hops"]["tts_first_byte_to_transport_ms"];
    for hop in [llm, audio] {
        assert!(
            hop["summary_ms"]["n"].as_u64().unwrap() >= answered,
            "{hop}"
        );
        assert_eq!(hop["malformed"], 0);
        // Generous for a debug build on a shared machine: a frame.
        assert!(hop["summary_ms"]["p50"].as_f64().unwrap() < 20.0, "{hop}");
    }

    let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
    assert!(md.contains("- command: `"), "header: {md}");
    assert!(md.contains("floor 778 ms"), "{md}");
    assert!(md.contains("V2V minus the floor"), "{md}");
    assert!(md.contains("| turn_end_to_llm_ms |"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}
