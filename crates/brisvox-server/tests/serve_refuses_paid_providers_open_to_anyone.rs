//! Safe by default: the real `brisvox serve` refuses to listen on a
//! non-loopback address with paid providers and a call route without a token;
//! with `--allow-unauthenticated-calls` it starts and says so loudly; on
//! loopback it starts without permission. No model files needed (energy VAD,
//! no turn model).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const PAID_AGENT: &str = include_str!("agents/paid-stt-open-twilio.toml");

fn agent_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), PAID_AGENT).unwrap();
    file
}

fn serve(agent: &tempfile::NamedTempFile, bind: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_brisvox"));
    cmd.arg("serve")
        .arg("--agent")
        .arg(agent.path())
        .args(["--bind", bind, "--log-format", "json"])
        .args(extra)
        .env("DEEPGRAM_API_KEY", "dg-test-key")
        .env("BRISVOX_CALL_TOKEN", "call-test-token")
        .env_remove("BRISVOX_ALLOW_UNAUTHENTICATED_CALLS")
        .env("RUST_LOG", "info");
    cmd
}

/// Kills the server when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server and reads its log up to "listening"; returns the log
/// lines read.
fn log_until_listening(mut cmd: Command) -> Vec<serde_json::Value> {
    let mut child = Running(
        cmd.stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts"),
    );
    let stderr = child.0.stderr.take().expect("piped");
    let mut seen = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("utf-8 log line");
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a JSON line: {line}"));
        let listening = v["fields"]["message"] == "listening";
        seen.push(v);
        if listening {
            return seen;
        }
    }
    panic!("the server exited before listening: {seen:?}");
}

#[test]
fn an_open_twilio_route_with_paid_stt_on_all_interfaces_is_refused() {
    let agent = agent_file();
    let out = serve(&agent, "0.0.0.0:0", &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it started: {stderr}");
    for needle in [
        "refusing to serve on 0.0.0.0:0",
        "/twilio accept calls without a token",
        "stt deepgram",
        "server.allow_unauthenticated_calls = true",
        "--allow-unauthenticated-calls",
    ] {
        assert!(stderr.contains(needle), "{needle:?} missing: {stderr}");
    }
    assert!(!stderr.contains("dg-test-key"), "the key leaked: {stderr}");
}

#[test]
fn the_flag_allows_it_with_a_loud_warning() {
    let agent = agent_file();
    let log = log_until_listening(serve(
        &agent,
        "0.0.0.0:0",
        &["--allow-unauthenticated-calls"],
    ));
    let warning = log
        .iter()
        .find(|v| {
            v["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("UNAUTHENTICATED CALLS ALLOWED"))
        })
        .unwrap_or_else(|| panic!("no warning in {log:?}"));
    assert_eq!(warning["level"], "WARN");
    assert_eq!(warning["fields"]["open_routes"], "[\"/twilio\"]");
}

#[test]
fn loopback_needs_no_permission_and_logs_no_warning() {
    let agent = agent_file();
    let log = log_until_listening(serve(&agent, "127.0.0.1:0", &[]));
    assert!(
        !log.iter()
            .any(|v| v.to_string().contains("UNAUTHENTICATED CALLS ALLOWED")),
        "{log:?}"
    );
}
