//! The real `brisvox` binary for end-to-end tests: start it, find its
//! address in its JSON log, kill it on drop; fixtures and Twilio messages.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use base64::Engine as _;
use brisvox_audio::g711;
use brisvox_audio::wav::read_wav;
use tokio_tungstenite::tungstenite::Message;

/// A running `brisvox serve`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the VAD and Smart Turn models (and, with `whisper`, the Whisper
/// model) are present; panics when they are missing under CI, else says why
/// the test is skipped.
pub fn models_present(whisper: bool) -> bool {
    use brisvox_models::runtime;
    let mut found = [runtime::SILERO_VAD_FILE, runtime::SMART_TURN_FILE]
        .iter()
        .all(|f| runtime::find_model_file(f).is_ok())
        && runtime::ort_library_path().is_ok_and(|p| p.exists());
    if whisper {
        found &= runtime::model_dir_candidates().iter().any(|d| {
            brisvox_models::whisper::missing_files(&d.join(brisvox_models::whisper::WHISPER_DIR))
                .is_none()
        });
    }
    if !found && runtime::models_required() {
        panic!("the model files are required under CI: run scripts/fetch-models.sh --whisper");
    }
    if !found {
        eprintln!("skipped: model files not found (run scripts/fetch-models.sh --whisper)");
    }
    found
}

/// Starts `brisvox serve` on a free loopback port with `args` added (an
/// agent file, say) and waits until it listens.
pub fn start_server(args: &[&str]) -> Server {
    start_server_with(args, &[], None)
}

/// The server on an agent file of mock STT, LLM and TTS with Silero VAD and
/// Smart Turn (without an agent file it is the local demo, whose providers
/// depend on what this machine has); keep the file alive as long as the
/// server.
pub fn start_mock_server() -> (Server, tempfile::NamedTempFile) {
    let agent = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        agent.path(),
        "# mock STT, LLM and TTS; Silero VAD and Smart Turn\n",
    )
    .expect("agent file");
    let path = agent.path().to_str().expect("utf-8 path").to_owned();
    (start_server(&["--agent", &path]), agent)
}

/// The JSON log lines a server wrote, from its start.
pub type Logs = std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

/// [`start_server`] with environment variables `env` set, its JSON log lines
/// (those before it listened, then the later ones as they come) collected
/// into `logs` when given.
pub fn start_server_with(args: &[&str], env: &[(&str, &str)], logs: Option<Logs>) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_brisvox"))
        .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the server logs until it listens")
            .expect("utf-8 log line");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON log lines");
        if let Some(logs) = &logs {
            logs.lock().expect("log lock").push(v.clone());
        }
        if v["fields"]["message"] == "listening" {
            break v["fields"]["local_addr"]
                .as_str()
                .expect("address")
                .parse()
                .expect("socket address");
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let (Some(logs), Ok(v)) = (&logs, serde_json::from_str(&line)) {
                logs.lock().expect("log lock").push(v);
            }
        }
    });
    Server { child, addr }
}

/// A fixture's samples (mono).
pub fn fixture(name: &str) -> Vec<i16> {
    let path = format!("{}/../../fixtures/{name}.wav", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("fixture present");
    read_wav(&bytes).expect("valid WAV").to_mono()
}

/// Twilio's `connected` and `start` for stream `sid` (mu-law, 8 kHz).
pub fn twilio_start(sid: &str) -> [String; 2] {
    let start = serde_json::json!({
        "event": "start", "sequenceNumber": "1", "streamSid": sid,
        "start": {
            "streamSid": sid, "accountSid": "AC0", "callSid": "CA0",
            "tracks": ["inbound"], "customParameters": {},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        }
    });
    [
        r#"{"event":"connected","protocol":"Call","version":"1.0.0"}"#.to_owned(),
        start.to_string(),
    ]
}

/// Twilio's `media` message `n` (from 0) carrying 8 kHz `chunk`.
pub fn twilio_media(sid: &str, chunk: &[i16], n: usize) -> Message {
    let payload: Vec<u8> = chunk.iter().map(|&s| g711::ulaw_encode(s)).collect();
    let msg = serde_json::json!({
        "event": "media", "sequenceNumber": (n + 2).to_string(), "streamSid": sid,
        "media": {"track": "inbound", "chunk": (n + 1).to_string(),
                  "timestamp": (n * 20).to_string(),
                  "payload": base64::engine::general_purpose::STANDARD.encode(payload)}
    });
    Message::Text(msg.to_string().into())
}

/// Whether a Twilio `media` payload holds a sample louder than 1000.
pub fn twilio_loud(ev: &serde_json::Value) -> bool {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(ev["media"]["payload"].as_str().expect("payload"))
        .expect("base64");
    bytes
        .iter()
        .any(|&b| g711::ulaw_decode(b).unsigned_abs() > 1000)
}

/// Twilio's `stop`.
pub fn twilio_stop(sid: &str) -> String {
    serde_json::json!({"event": "stop", "sequenceNumber": "999", "streamSid": sid,
                       "stop": {"accountSid": "AC0", "callSid": "CA0"}})
    .to_string()
}
