//! The real `brisvox serve` binary (mock providers, the real Silero VAD and
//! Smart Turn models) answers a caller over `/call` and over `/twilio`: a
//! client written here plays a recorded utterance in real time and receives a
//! transcript, the bot's speech and the turn's metrics.
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use std::time::Duration;

use common::binary::{
    fixture, models_present, twilio_loud, twilio_media, twilio_start, twilio_stop,
};
use common::{Seen, Ws};
use futures_util::SinkExt as _;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

/// The whole exchange must be over well within this.
const CALL_LIMIT: Duration = Duration::from_secs(30);

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
    if !models_present(false) {
        return;
    }
    let (server, _agent) = common::binary::start_mock_server();
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
    if !models_present(false) {
        return;
    }
    let (server, _agent) = common::binary::start_mock_server();
    let mut ws = common::connect(server.addr, "/twilio").await;
    let sid = "MZ00000000000000000000000000000001";
    for text in twilio_start(sid) {
        common::send_text(&mut ws, &text).await;
    }
    let media = |chunk: &[i16], n: usize| twilio_media(sid, chunk, n);
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
            seen.audible_frames += usize::from(twilio_loud(&ev));
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
    common::send_text(&mut ws, &twilio_stop(sid)).await;
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
}
