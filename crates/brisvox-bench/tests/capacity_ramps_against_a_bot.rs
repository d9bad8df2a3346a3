//! `brisvox-bench capacity` against the in-test bot (a known 500 ms V2V): steps of
//! 1 and 2 calls pass with a floor of 500 ms, the report has every step with its
//! verdict and samples, and the process-tree probe reads the server (this test
//! process, where the bot runs).
//!
//! What is under test is the ramp and its report, not the machine's speed: the
//! p95 limit is wide (2 s over the floor) and the generator-limited share is
//! off (1.0), because on a busy machine the in-test bot answers late and the
//! generator sends late, and the bench then rightly judges a step `fail` or
//! `generator_limited` (the flake hunt saw step 2 judged generator limited at
//! a load average of 16: 1.76 % of frames more than 100 ms late). Those
//! verdicts have their own unit tests (`capacity::ramp`, `capacity::judge`).

mod support;

use support::{EXPECTED_MS, bot_run, read_reports};

#[test]
fn capacity_ramps_and_reports_each_step() {
    let run = bot_run("capacity-test");
    let (dir, wav, port) = (&run.dir, &run.wav, run.port);
    let stem = dir.join("cap");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args(["capacity", "--url", &format!("ws://127.0.0.1:{port}/call")])
        .args([
            "--fixture",
            wav.to_str().unwrap(),
            "--steps",
            "1,2",
            "--rounds",
            "1",
        ])
        .args([
            "--spread-ms",
            "200",
            "--floor-ms",
            "500",
            "--response-window-ms",
            "6000",
            "--slo-over-floor-ms",
            "2000",
            "--client-late-share",
            "1.0",
        ])
        .args([
            "--server-pid",
            &std::process::id().to_string(),
            "--max-run-s",
            "120",
        ])
        .args(["--out", stem.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let (json, md) = read_reports(&stem);
    assert_eq!(json["p95_limit_ms"], 2500.0);
    assert_eq!(json["result"]["largest_passing_step"], 2);
    assert!(json["result"]["smallest_failing_step"].is_null());
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for (st, n) in steps.iter().zip([1u64, 2]) {
        assert_eq!(st["calls_at_once"], n);
        assert_eq!(st["verdict"]["outcome"], "pass", "{}", st["verdict"]);
        assert_eq!(st["calls"].as_array().unwrap().len() as u64, n);
        assert_eq!(st["summary"]["outcomes"]["answered"], 2 * n);
        let p95 = st["summary"]["v2v_ms"]["p95"].as_f64().unwrap();
        // The bot answers in 500 ms when punctual (never sooner); the
        // measurement's precision is v2v_measures_a_known_reply_delay's to
        // check, here only that the passing step's p95 is inside its limit.
        assert!((EXPECTED_MS..2500.0).contains(&p95), "p95 {p95}");
        assert!(
            st["server"]["rss_peak_mb"].as_f64().unwrap() > 0.0,
            "{}",
            st["server"]
        );
        assert!(st["server"]["readings"].as_u64().unwrap() >= 2);
    }
    assert!(md.contains("largest passing step 2"), "{md}");
    let _ = std::fs::remove_dir_all(dir);
}
