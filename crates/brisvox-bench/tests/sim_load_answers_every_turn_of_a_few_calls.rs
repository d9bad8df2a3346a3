//! `brisvox-bench sim-load` end to end on a few short calls (debug build, real
//! time, about 11 s): every turn is answered, and the markdown and JSON carry
//! every field the results file needs.

use std::path::PathBuf;
use std::process::Command;

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("brisvox-sim-load-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn four_short_calls_answer_every_turn_and_report_every_figure() {
    let dir = out_dir("clean");
    let md = dir.join("sim.md");
    let status = Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args([
            "sim-load",
            "--sessions",
            "4",
            "--workers",
            "2",
            "--turns",
            "3",
        ])
        .args(["--speech-ms", "600", "--gap-ms", "3000", "--ramp-ms", "100"])
        .args(["--out", md.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("- command: `"), "{text}");
    assert!(text.contains("build profile: debug"), "{text}");
    assert!(text.contains("| 4 | 12 / 12 | 0 | 0 |"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(md.with_extension("json")).unwrap()).unwrap();
    let step = &json["steps"][0];
    assert_eq!(step["sessions"], 4);
    let tally = &step["tally"];
    assert_eq!(tally["turns_expected"], 12);
    assert_eq!(tally["turns_answered"], 12);
    for zero in ["calls_failed", "barge_ins", "marks_missing", "tasks_leaked"] {
        assert_eq!(tally[zero], 0, "{zero}");
    }
    for summary in [
        "overhead_ms",
        "turn_end_to_llm_ms",
        "tts_first_byte_to_transport_ms",
    ] {
        assert_eq!(step[summary]["n"], 12, "{summary}");
        let p50 = step[summary]["p50"].as_f64().unwrap();
        // Engine hops of a debug build on a loaded machine: well under a frame
        // normally; 100 ms would mean a provider interval leaked into them.
        assert!((0.0..100.0).contains(&p50), "{summary} p50 {p50}");
    }
    assert_eq!(step["samples"]["overhead_ms"].as_array().unwrap().len(), 12);
    // ~11 s of calls at one wake per 5 ms.
    assert!(
        step["wake_ms"]["n"].as_u64().unwrap() > 500,
        "{}",
        step["wake_ms"]
    );
    let cores = step["plateau_cores"].as_f64().unwrap();
    assert!(cores > 0.0 && cores < 2.5, "cores {cores}");
    let tasks = step["tasks_per_call"].as_f64().unwrap();
    assert!(
        tasks >= 6.0,
        "the call and its six stages at least: {tasks}"
    );
    assert!(step["heap_per_call_kib"].as_f64().unwrap() > 0.0);
    assert_eq!(step["tasks_after"], step["tasks_before"]);
    let _ = std::fs::remove_dir_all(&dir);
}
