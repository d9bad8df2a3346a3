//! `brisvox-bench v2v` against a tiny in-test bot on 127.0.0.1: the bot answers
//! 200 ms of silence after speech with a tone, 300 ms later. With a synthetic
//! fixture whose speech ends on a frame edge, the true V2V is 200 + 300 = 500 ms
//! plus however late the bot was (it reports the delay it really took after
//! the frame that ended the turn); the client must measure it within a frame
//! of that, and never less than 500 ms.

mod support;

use support::{EXPECTED_MS, REPLY_DELAY_MS, bot_run, read_reports};

/// One frame of the client audio, ms.
const FRAME_MS: f64 = 20.0;

#[test]
fn v2v_measures_the_bots_known_delay_within_a_frame() {
    let run = bot_run("v2v-test");
    let (dir, wav, port) = (&run.dir, &run.wav, run.port);
    let stem = dir.join("out");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args([
            "v2v",
            "--url",
            &format!("ws://127.0.0.1:{port}/call"),
            "--fixture",
            wav.to_str().unwrap(),
        ])
        .args([
            "--runs",
            "2",
            "--concurrency",
            "2",
            "--response-window-ms",
            "2000",
            "--linger-ms",
            "300",
        ])
        .args(["--out", stem.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let (json, md) = read_reports(&stem);
    let calls = json["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert!(call["error"].is_null(), "{call}");
        let turns = call["turns"].as_array().unwrap();
        assert_eq!(turns.len(), 2);
        let metrics = call["turn_metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 2, "both turn_metrics collected");
        for (t, m) in turns.iter().zip(metrics) {
            assert_eq!(t["outcome"], "answered", "{t}");
            let v2v = t["v2v_ms"].as_f64().unwrap();
            // What the bot really took after the frame that ended the turn
            // (300 ms when punctual; more when the machine is loaded).
            let took = m["response_latency_ms"].as_f64().unwrap();
            assert!(took >= REPLY_DELAY_MS as f64, "{m}");
            let expected = EXPECTED_MS + (took - REPLY_DELAY_MS as f64);
            assert!(
                v2v >= EXPECTED_MS && (v2v - expected).abs() <= FRAME_MS,
                "V2V {v2v} ms, expected {expected} within a frame (the bot took {took} ms)"
            );
        }
        assert_eq!(call["end_reason"], "client_end");
    }
    assert_eq!(json["summary"]["outcomes"]["answered"], 4);
    assert_eq!(json["summary"]["v2v_ms"]["n"], 4);
    assert!(md.contains("- command: `"), "header present: {md}");
    let _ = std::fs::remove_dir_all(dir);
}
