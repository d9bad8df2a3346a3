//! `brisvox drain --pid N` (the Kubernetes preStop hook) starts the drain of a
//! running `brisvox serve` and returns once the server has exited cleanly;
//! the server takes its address from `BRISVOX_BIND` and its agent file from
//! `BRISVOX_AGENT` when the flags are absent.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[tokio::test]
async fn drain_subcommand_stops_the_server_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent.toml");
    std::fs::write(
        &agent,
        "[stt]\nprovider = \"mock\"\n[llm]\nprovider = \"mock\"\n[tts]\nprovider = \"mock\"\n\
         [vad]\ndetector = \"energy\"\n[turn]\nanalyzer = \"always_complete\"\n\
         [server]\ndrain_admit_s = 1\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_brisvox"))
        .arg("serve")
        .env("BRISVOX_BIND", "127.0.0.1:0")
        .env("BRISVOX_AGENT", &agent)
        .env("BRISVOX_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr: std::net::SocketAddr = loop {
        let line = lines.next().expect("the server logs").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON log lines");
        if v["fields"]["message"] == "listening" {
            break v["fields"]["local_addr"].as_str().unwrap().parse().unwrap();
        }
    };
    assert!(addr.ip().is_loopback(), "BRISVOX_BIND was used: {addr}");
    assert_eq!(common::get(addr, "/readyz").await, (200, "ready\n".into()));

    let pid = child.id().to_string();
    let drain = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_brisvox"))
            .args(["drain", "--pid", &pid, "--timeout-s", "30"])
            .output()
            .unwrap()
    });
    // Readiness is false while the server still admits (drain_admit_s = 1).
    common::eventually_get(addr, "/readyz", (503, "draining\n")).await;
    let out = drain.await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `drain` returned: the server is gone, and it exited cleanly.
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("drained")), "{rest:?}");
}

#[test]
fn drain_of_a_process_that_does_not_exist_is_an_error() {
    // Far above any pid_max: no such process.
    let out = Command::new(env!("CARGO_BIN_EXE_brisvox"))
        .args(["drain", "--pid", "2000000000", "--timeout-s", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot signal process 2000000000"), "{err}");
}
