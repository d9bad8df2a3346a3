//! `brisvox-bench capacity --arrivals poisson` against the in-test bot: the
//! calls start as a Poisson process and each plays the fixture from a random
//! point of silence, so some calls hear only the second utterance. Every turn
//! each call played is answered, none is cut or unclean, and the report says
//! how the calls arrived. (The draws themselves are unit-tested in
//! `capacity::arrivals`.)

mod support;

use support::{bot_run, read_reports};

#[test]
fn poisson_calls_start_at_quiet_points_and_are_all_answered() {
    let run = bot_run("capacity-poisson");
    let (dir, port) = (&run.dir, run.port);
    let stem = dir.join("cap");
    let wav = run.wav.to_str().unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_brisvox-bench"))
        .args(["capacity", "--url", &format!("ws://127.0.0.1:{port}/call")])
        .args(["--fixture", wav, "--fixtures", wav, "--arrivals", "poisson"])
        .args(["--seed", "5", "--steps", "4", "--rounds", "2"])
        .args(["--spread-ms", "400", "--floor-ms", "500"])
        .args(["--slo-over-floor-ms", "2000", "--client-late-share", "1.0"])
        .args(["--max-run-s", "120", "--out", stem.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let (json, md) = read_reports(&stem);
    assert_eq!(json["options"]["arrivals"], "poisson");
    assert_eq!(json["options"]["seed"], 5);
    let step = &json["steps"][0];
    assert_eq!(step["verdict"]["outcome"], "pass", "{}", step["verdict"]);
    let calls = step["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 8);
    let mut turns = 0;
    let mut cut = 0;
    for c in calls {
        let name = c["fixture"].as_str().unwrap();
        let n = c["turns"].as_array().unwrap().len();
        // From the start or before 0.5 s: both utterances; from the gap
        // (1.5-3.7 s): the second only.
        let from_ms: u64 = name
            .split_once('@')
            .map_or(0, |(_, ms)| ms.trim_end_matches("ms").parse().unwrap());
        assert_eq!(n, if from_ms < 500 { 2 } else { 1 }, "{name}");
        assert!(from_ms < 200 || (1500..=3700).contains(&from_ms), "{name}");
        cut += usize::from(from_ms > 0);
        turns += n;
    }
    assert!(cut > 0, "no call started past the fixture's start");
    assert_eq!(step["summary"]["outcomes"]["answered"], turns as u64);
    assert!(md.contains("arrivals poisson (seed 5"), "{md}");
    let _ = std::fs::remove_dir_all(dir);
}
