//! The real `brisvox serve` binary (mock providers, the real Silero VAD and
//! Smart Turn models) answers a caller over `/call` and over `/twilio`: a
//! client written here plays a recorded utterance in real time and receives a
//! transcript, the bot's speech and the turn's metrics.
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use brisvox_audio::g711;
use brisvox_audio::wav::read_wav;
use common::{Seen, Ws};
use futures_util::SinkExt as _;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

/// The whole exchange must be over well within this.
const CALL_LIMIT: Duration = Duration::from_secs(30);

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn models_present() -> bool {
    use brisvox_models::runtime;
    let found = [runtime::SILERO_VAD_FILE, runtime::SMART_TURN_FILE]
        .iter()
        .all(|f| runtime::find_model_file(f).is_ok())
        && runtime::ort_library_path().is_ok_and(|p| p.exists());
    if !found && runtime::models_required() {
        panic!("the model files are required under CI: run scripts/fetch-models.sh");
    }
    if !found {
        eprintln!("skipped: model files not found (run scripts/fetch-models.sh)");
    }
    found
}

fn start_server() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_brisvox"))
        .args(["serve", "--bind", "127.0.0.1:0", "--log-format", "json"])
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
        if v["fields"]["message"] == "listening" {
            break v["fields"]["local_addr"]
                .as_str()
                .expect("address")
                .parse()
                .expect("socket address");
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    Server { child, addr }
}

fn fixture(name: &str) -> Vec<i16> {
    let path = format!("{}/../../fixtures/{name}.wav", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("fixture present");
    read_wav(&bytes).expect("valid WAV").to_mono()
}

/// What the client saw of the call.
#[derive(Default, Debug)]
struct Seen2 {
    final_transcript: Option<String>,
    bot_started: bool,
    audible_frames: usize,
    turn_metrics: Option<serde_json::Value>,
}

impl Seen2 {
    fn done(&self) -> bool {
        self.final_transcript.is_some()
            && self.bot_started
            && self.audible_frames >= 5
            && self.turn_metrics.is_some()
    }
}

/// Sends `frames` one every 20 ms on an absolute grid, then silence, while
/// collecting what comes back, until everything expected was seen.
async fn play_and_listen(
    ws: &mut Ws,
    frames: Vec<Message>,
    silence: Message,
    mut on_message: impl FnMut(Seen, &mut Seen2),
) -> Seen2 {
    let mut seen = Seen2::default();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let deadline = Instant::now() + CALL_LIMIT;
    let mut frames = frames.into_iter();
    while !seen.done() {
        assert!(
            Instant::now() < deadline,
            "no complete answer in time: {seen:?}"
        );
        tokio::select! {
            _ = tick.tick() => {
                let msg = frames.next().unwrap_or_else(|| silence.clone());
                ws.send(msg).await.expect("send audio");
            }
            m = common::next(ws) => on_message(m, &mut seen),
        }
    }
    seen
}

#[tokio::test]
async fn a_caller_over_call_gets_a_spoken_answer() {
    if !models_present() {
        return;
    }
    let server = start_server();
    let mut ws = common::connect(server.addr, "/call").await;
    common::send_text(
        &mut ws,
        r#"{"type":"start","protocol_version":1,"codec":"pcm16","sample_rate":16000,"call_id":"e2e-1"}"#,
    )
    .await;
    let started = common::next_event(&mut ws).await;
    assert_eq!(started["type"], "started", "{started}");
    assert_eq!(started["mock"], true);
    let frames = fixture("librivox_0880")
        .chunks(320)
        .map(|c| Message::Binary(c.iter().flat_map(|s| s.to_le_bytes()).collect()))
        .collect();
    let silence = Message::Binary(vec![0; 640].into());
    let seen = play_and_listen(&mut ws, frames, silence, |m, seen| match m {
        Seen::Audio(bytes) => {
            let loud = bytes
                .chunks_exact(2)
                .any(|b| i16::from_le_bytes([b[0], b[1]]).unsigned_abs() > 1000);
            seen.audible_frames += usize::from(loud);
        }
        Seen::Event(ev) => match ev["type"].as_str() {
            Some("transcript") if ev["final"] == true => {
                seen.final_transcript = ev["text"].as_str().map(str::to_owned);
            }
            Some("bot_speaking_started") => seen.bot_started = true,
            Some("turn_metrics") => seen.turn_metrics = Some(ev),
            _ => {}
        },
        other => panic!("unexpected {other:?}"),
    })
    .await;
    assert_eq!(seen.final_transcript.as_deref(), Some("mock transcript 1"));
    let metrics = seen.turn_metrics.expect("metrics");
    let latency = metrics["response_latency_ms"]
        .as_f64()
        .expect("answered turn");
    assert!(latency > 0.0 && latency < 5_000.0, "{metrics}");
    common::send_text(&mut ws, r#"{"type":"end"}"#).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
}

#[tokio::test]
async fn a_twilio_caller_gets_spoken_media_back() {
    if !models_present() {
        return;
    }
    let server = start_server();
    let mut ws = common::connect(server.addr, "/twilio").await;
    let sid = "MZ00000000000000000000000000000001";
    common::send_text(
        &mut ws,
        r#"{"event":"connected","protocol":"Call","version":"1.0.0"}"#,
    )
    .await;
    let start = serde_json::json!({
        "event": "start", "sequenceNumber": "1", "streamSid": sid,
        "start": {
            "streamSid": sid, "accountSid": "AC0", "callSid": "CA0",
            "tracks": ["inbound"], "customParameters": {},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        }
    });
    common::send_text(&mut ws, &start.to_string()).await;
    let b64 = base64::engine::general_purpose::STANDARD;
    let media = |chunk: &[i16], n: usize| {
        let payload: Vec<u8> = chunk.iter().map(|&s| g711::ulaw_encode(s)).collect();
        let msg = serde_json::json!({
            "event": "media", "sequenceNumber": (n + 2).to_string(), "streamSid": sid,
            "media": {"track": "inbound", "chunk": (n + 1).to_string(),
                      "timestamp": (n * 20).to_string(), "payload": b64.encode(payload)}
        });
        Message::Text(msg.to_string().into())
    };
    let audio = fixture("phone_all_circuits_busy_now_8k");
    let frames = audio
        .chunks(160)
        .enumerate()
        .map(|(n, c)| media(c, n))
        .collect();
    let silence = media(&[0; 160], 0);
    let seen = play_and_listen(&mut ws, frames, silence, |m, seen| {
        let Seen::Event(ev) = m else {
            panic!("Twilio gets JSON text only")
        };
        if ev["event"] == "media" {
            assert_eq!(ev["streamSid"], sid);
            let bytes = b64
                .decode(ev["media"]["payload"].as_str().expect("payload"))
                .expect("base64");
            let loud = bytes
                .iter()
                .any(|&b| g711::ulaw_decode(b).unsigned_abs() > 1000);
            seen.audible_frames += usize::from(loud);
            // Twilio has no transcript or metrics events: count the answer itself.
            if seen.audible_frames >= 5 {
                seen.bot_started = true;
                seen.final_transcript.get_or_insert_with(String::new);
                seen.turn_metrics.get_or_insert(serde_json::Value::Null);
            }
        }
    })
    .await;
    assert!(seen.audible_frames >= 5);
    common::send_text(
        &mut ws,
        &serde_json::json!({"event": "stop", "sequenceNumber": "999", "streamSid": sid,
                            "stop": {"accountSid": "AC0", "callSid": "CA0"}})
        .to_string(),
    )
    .await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
}
