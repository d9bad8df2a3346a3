//! `brisvox serve` (the binary) listens, logs JSON lines, answers /healthz and
//! exits cleanly after SIGTERM, raising RLIMIT_NOFILE at startup.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use brisvox_testkit::{PATIENCE, eventually_some};

/// Kills the server if the test fails before it exits.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serve_then_sigterm() {
    let mut child = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_brisvox"))
            .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let addr: std::net::SocketAddr = loop {
        let line = lines
            .next()
            .expect("the server logs before listening")
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON log lines");
        seen.push(
            v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        if v["fields"]["message"] == "listening" {
            break v["fields"]["local_addr"].as_str().unwrap().parse().unwrap();
        }
    };
    assert!(seen.iter().any(|m| m.contains("RLIMIT_NOFILE")), "{seen:?}");
    // Without an agent file it is the local demo, and it says which STT it
    // uses (local Whisper when the model is fetched, else the mock).
    assert!(seen.iter().any(|m| m.starts_with("STT: ")), "{seen:?}");
    assert_eq!(common::get(addr, "/healthz").await.0, 200);

    let status = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = eventually_some(PATIENCE, "brisvox serve exits after SIGTERM", || {
        child.0.try_wait().unwrap()
    });
    assert!(exit.success(), "{exit:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().any(|l| l.contains("drained")), "{rest:?}");
}
