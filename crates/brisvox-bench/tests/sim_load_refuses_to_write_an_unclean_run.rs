//! `brisvox-bench sim-load` refuses to write results when a turn goes
//! unanswered: with 900 ms between utterances the caller speaks again before
//! the answer has played (the turn is taken back or interrupted), so the run
//! exits non-zero, says why, and leaves no file behind.

use std::process::Command;

#[test]
fn a_run_whose_turns_go_unanswered_writes_nothing_and_fails() {
    let dir = std::env::temp_dir().join(format!("brisvox-sim-load-{}-unclean", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let md = dir.join("sim.md");
    let output = Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args([
            "sim-load",
            "--sessions",
            "2",
            "--workers",
            "1",
            "--turns",
            "3",
        ])
        .args(["--speech-ms", "600", "--gap-ms", "900", "--ramp-ms", "50"])
        .args(["--out", md.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refuses to write results"), "{stderr}");
    assert!(
        stderr.contains("unanswered") || stderr.contains("barge-in"),
        "{stderr}"
    );
    assert!(!md.exists());
    assert!(!md.with_extension("json").exists());
}
