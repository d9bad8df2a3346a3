//! One call: connect, `start`, stream the fixture in real time on the absolute
//! schedule of [`super::schedule`], record every bot message's arrival, keep the
//! line open with digital silence until the last reply has played (or the
//! response window has passed), then `end`.
//!
//! Two tasks share the socket: the sender (this function) owns the write half and
//! the schedule; the receiver owns the read half and the arrival log. They share
//! only the arrival time of the latest non-silent bot message (an atomic) and a
//! closed flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use tokio_tungstenite::tungstenite::{Bytes, Message};

use super::fixture::Fixture;
use super::schedule;
use super::turns::{self, Span, TurnResult};

/// Settings of a call.
#[derive(Debug, Clone)]
pub(crate) struct CallSettings {
    /// Websocket URL of the server (`ws://127.0.0.1:PORT/call`).
    pub(crate) url: String,
    /// Time allowed for a reply after an end of speech, ms.
    pub(crate) response_window_ms: u64,
    /// After the last reply, how long the bot must have been silent before the
    /// call is ended, ms (lets the reply finish and `turn_metrics` arrive).
    pub(crate) linger_ms: u64,
    /// Time limit for connecting and for `started`, ms.
    pub(crate) connect_timeout_ms: u64,
    /// `start`'s `frame_ms` on `/call`: the duration of the server's audio
    /// messages (`None`: not sent, the server's default of 20 ms).
    pub(crate) frame_ms: Option<u32>,
    /// The encoding of a call over a carrier's route (`None`: the carrier's
    /// default, [`super::carrier`]); `/call` streams PCM16.
    pub(crate) codec: Option<brisvox_transport::AudioCodec>,
    /// How the call is placed: over the URL's route, or over WebRTC beside
    /// its `/call` ([`super::webrtc`]).
    pub(crate) transport: Transport,
}

/// How a call is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The URL's websocket route: `/call`, or a carrier's as that carrier
    /// places it.
    Url,
    /// WebRTC: the offer to `/webrtc/offer` beside the URL's `/call`.
    WebRtc,
}

impl Transport {
    /// Its name in `--transports` and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Transport::Url => "call",
            Transport::WebRtc => "webrtc",
        }
    }
}

/// A fixture cut into frames, shared by all calls that play it.
#[derive(Debug)]
pub(crate) struct PreparedFixture {
    /// The fixture.
    pub(crate) fixture: Fixture,
    /// Its 20 ms PCM16 frames.
    pub(crate) frames: Vec<Bytes>,
    /// A 20 ms frame of digital silence.
    pub(crate) silence: Bytes,
    /// Its utterances on the stream clock.
    pub(crate) spans: Vec<Span>,
}

impl PreparedFixture {
    /// Cuts `fixture` into frames.
    pub(crate) fn new(fixture: Fixture) -> Self {
        let rate = fixture.sidecar.sample_rate_hz;
        let frames = schedule::pcm16_frames(&fixture.samples, rate)
            .into_iter()
            .map(Bytes::from)
            .collect();
        let silence = Bytes::from(vec![0u8; schedule::frame_samples(rate) * 2]);
        let spans = fixture
            .sidecar
            .utterances
            .iter()
            .map(|u| Span {
                start_us: (u.start_ms * 1000.0).round() as u64,
                end_us: (u.end_ms * 1000.0).round() as u64,
            })
            .collect();
        PreparedFixture {
            fixture,
            frames,
            silence,
            spans,
        }
    }
}

/// What one call measured.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct CallRecord {
    /// The call id sent in `start` (or the carrier's stream id).
    pub(crate) call_id: String,
    /// Fixture name.
    pub(crate) fixture: String,
    /// How it was placed: `call` (the URL's route) or `webrtc`.
    pub(crate) transport: &'static str,
    /// Why the call failed (could not connect, refused, broke, error event);
    /// `None` for a call that ran to its end.
    pub(crate) error: Option<String>,
    /// One entry per utterance, in order.
    pub(crate) turns: Vec<TurnResult>,
    /// The sidecar's language of each utterance (empty when not given).
    pub(crate) languages: Vec<String>,
    /// Frames sent (fixture and trailing silence).
    pub(crate) frames_sent: u64,
    /// Largest send lateness, ms.
    pub(crate) lateness_max_ms: f64,
    /// Frames sent more than 100 ms late.
    pub(crate) frames_late_100ms: u64,
    /// Send lateness of every frame, µs (for the pooled p99; not in the JSON).
    #[serde(skip)]
    pub(crate) lateness_us: Vec<u32>,
    /// `turn_metrics` events as received.
    pub(crate) turn_metrics: Vec<serde_json::Value>,
    /// The text of every `bot_text` event, as received (`/call` only).
    pub(crate) bot_texts: Vec<String>,
    /// `clear` events received.
    pub(crate) clears: u32,
    /// Arrival of every `clear`, µs from the start of the fixture (not in the JSON).
    #[serde(skip)]
    pub(crate) clear_us: Vec<u64>,
    /// Non-silent bot audio messages received.
    pub(crate) bot_audio_messages: u64,
    /// Arrival of every non-silent bot audio message, µs from the start of the
    /// fixture (not in the JSON).
    #[serde(skip)]
    pub(crate) bot_audio_us: Vec<u64>,
    /// The server's `end` reason, if it sent one.
    pub(crate) end_reason: Option<String>,
}

impl CallRecord {
    /// A call of `fx` that has measured nothing yet: no turns, no frames.
    pub(crate) fn empty(fx: &PreparedFixture) -> CallRecord {
        CallRecord {
            call_id: String::new(),
            fixture: fx.fixture.sidecar.name.clone(),
            transport: Transport::Url.name(),
            error: None,
            turns: Vec::new(),
            languages: fx
                .fixture
                .sidecar
                .utterances
                .iter()
                .map(|u| u.language.clone())
                .collect(),
            frames_sent: 0,
            lateness_max_ms: 0.0,
            frames_late_100ms: 0,
            lateness_us: Vec::new(),
            turn_metrics: Vec::new(),
            bot_texts: Vec::new(),
            clears: 0,
            clear_us: Vec::new(),
            bot_audio_messages: 0,
            bot_audio_us: Vec::new(),
            end_reason: None,
        }
    }
}

/// Shared between the sender and the receiver of one call.
#[derive(Default)]
pub(super) struct Shared {
    /// µs from begin of the latest non-silent bot message, plus one (0 = none).
    pub(super) last_bot_audio_us: AtomicU64,
    /// The receiver saw the end of the connection.
    pub(super) closed: AtomicBool,
    /// The caller closed the socket (a carrier without a stop message): a
    /// connection that ends abruptly after it is no failure of the call.
    pub(super) hung_up: AtomicBool,
}

/// What the receiver hands back.
#[derive(Default)]
pub(super) struct Received {
    pub(super) bot_audio_us: Vec<u64>,
    pub(super) turn_metrics: Vec<serde_json::Value>,
    pub(super) bot_texts: Vec<String>,
    pub(super) clear_us: Vec<u64>,
    pub(super) end_reason: Option<String>,
    pub(super) error: Option<String>,
}

pub(super) type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Runs one call to completion; never panics on a server's misbehaviour. A
/// carrier's URL (`/twilio`, `/telnyx`, `/plivo`, `/vonage`, `/exotel`)
/// places the call as that carrier does ([`super::carrier`]).
pub(crate) async fn run_call(
    settings: &CallSettings,
    fx: Arc<PreparedFixture>,
    call_id: &str,
) -> CallRecord {
    let mut record = if settings.transport == Transport::WebRtc {
        super::webrtc::run_call(settings, fx, call_id).await
    } else if let Some(carrier) = super::carrier::carrier_of_url(&settings.url) {
        super::carrier::run_call(settings, fx, call_id, carrier).await
    } else {
        run_ws_call(settings, fx, call_id).await
    };
    record.call_id = call_id.to_owned();
    record
}

/// [`run_call`] over the brisvox websocket protocol (`/call`).
async fn run_ws_call(
    settings: &CallSettings,
    fx: Arc<PreparedFixture>,
    call_id: &str,
) -> CallRecord {
    let mut record = CallRecord::empty(&fx);
    let ws = match open(settings, &fx, call_id).await {
        Ok(ws) => ws,
        Err(e) => {
            record.error = Some(e);
            record.turns = turns::classify(&fx.spans, &[], settings.response_window_ms * 1000);
            return record;
        }
    };
    let (mut sink, stream) = ws.split();
    let begin = Instant::now();
    let shared = Arc::new(Shared::default());
    let receiver = tokio::spawn(receive(stream, begin, shared.clone()));
    let send_result = send_schedule(&mut sink, settings, &fx, begin, &shared, &mut record).await;
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        sink.send(Message::text(r#"{"type":"end","reason":"benchmark done"}"#)),
    )
    .await;
    let received = join_receiver(receiver, "no end from the server within 3 s").await;
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
    record.error = send_result.err().or(received.error);
    record.bot_audio_messages = received.bot_audio_us.len() as u64;
    record.turns = turns::classify(
        &fx.spans,
        &received.bot_audio_us,
        settings.response_window_ms * 1000,
    );
    record.turn_metrics = received.turn_metrics;
    record.bot_texts = received.bot_texts;
    record.clears = received.clear_us.len() as u32;
    record.clear_us = received.clear_us;
    record.bot_audio_us = received.bot_audio_us;
    record.end_reason = received.end_reason;
    record
}

/// What the receiver task saw, waiting at most 3 s for it to end; `late`
/// is the error when it does not.
pub(super) async fn join_receiver(
    receiver: tokio::task::JoinHandle<Received>,
    late: &str,
) -> Received {
    match tokio::time::timeout(Duration::from_secs(3), receiver).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Received {
            error: Some(format!("receiver task: {e}")),
            ..Received::default()
        },
        Err(_) => Received {
            error: Some(late.to_owned()),
            ..Received::default()
        },
    }
}

/// A failed upgrade; a refusal (HTTP 503 with the `error` event as its body)
/// says its reason.
pub(super) fn connect_error(e: tokio_tungstenite::tungstenite::Error) -> String {
    match e {
        tokio_tungstenite::tungstenite::Error::Http(response) => {
            let body = response.body().as_deref().unwrap_or_default();
            format!(
                "refused: HTTP {} {}",
                response.status().as_u16(),
                String::from_utf8_lossy(body)
            )
        }
        e => format!("connect: {e}"),
    }
}

/// The generator's websocket settings: a 4 KiB read buffer instead of the
/// library's 128 KiB, which is zero-filled before every socket read (a
/// 128 KiB memset per 20 ms answer frame and call would make the generator,
/// not the server, the limit of a ramp of thousands of calls).
fn ws_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4096)
}

/// Opens the websocket of `settings.url`, within the connect timeout.
pub(super) async fn connect(settings: &CallSettings) -> Result<WsStream, String> {
    let limit = Duration::from_millis(settings.connect_timeout_ms);
    let (ws, _) = tokio::time::timeout(
        limit,
        tokio_tungstenite::connect_async_with_config(
            settings.url.as_str(),
            Some(ws_config()),
            false,
        ),
    )
    .await
    .map_err(|_| "connect timed out".to_string())?
    .map_err(connect_error)?;
    Ok(ws)
}

/// Connects, sends `start` and waits for `started`.
async fn open(
    settings: &CallSettings,
    fx: &PreparedFixture,
    call_id: &str,
) -> Result<WsStream, String> {
    let limit = Duration::from_millis(settings.connect_timeout_ms);
    let mut ws = connect(settings).await?;
    let mut start = serde_json::json!({
        "type": "start", "protocol_version": 1, "codec": "pcm16",
        "sample_rate": fx.fixture.sidecar.sample_rate_hz, "call_id": call_id,
    });
    if let Some(ms) = settings.frame_ms {
        start["frame_ms"] = ms.into();
    }
    ws.send(Message::text(start.to_string()))
        .await
        .map_err(|e| format!("send start: {e}"))?;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let msg = tokio::time::timeout_at(deadline, ws.next())
            .await
            .map_err(|_| "no started event in time".to_string())?;
        match msg {
            Some(Ok(Message::Text(t))) => {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
                match v["type"].as_str() {
                    Some("started") => return Ok(ws),
                    Some("error") | Some("end") => return Err(format!("refused: {t}")),
                    _ => {}
                }
            }
            Some(Ok(Message::Close(c))) => return Err(format!("closed before started: {c:?}")),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(format!("before started: {e}")),
            None => return Err("closed before started".into()),
        }
    }
}

/// Sends the fixture and then silence, frame `k` at `begin + (k+1)·20 ms`.
async fn send_schedule(
    sink: &mut futures_util::stream::SplitSink<WsStream, Message>,
    settings: &CallSettings,
    fx: &PreparedFixture,
    begin: Instant,
    shared: &Shared,
    record: &mut CallRecord,
) -> Result<(), String> {
    let stop = StopRule::of(settings, fx);
    record.lateness_us.reserve(fx.frames.len() + 400);
    let begin_tokio = tokio::time::Instant::from_std(begin);
    for k in 0u64.. {
        let due = schedule::deadline(k);
        let fixture_frame = fx.frames.get(k as usize);
        if fixture_frame.is_none() && stop.now(shared, due) {
            return Ok(());
        }
        tokio::time::sleep_until(begin_tokio + due).await;
        let frame = fixture_frame.unwrap_or(&fx.silence).clone();
        sink.send(Message::Binary(frame))
            .await
            .map_err(|e| format!("send frame {k}: {e}"))?;
        record_lateness(record, due, begin);
    }
    Ok(())
}

/// Counts a frame due at `due` (from `begin`) and sent now, and its lateness.
pub(super) fn record_lateness(record: &mut CallRecord, due: Duration, begin: Instant) {
    let late = schedule::lateness(due, begin.elapsed());
    record.frames_sent += 1;
    record
        .lateness_us
        .push(u32::try_from(late.as_micros()).unwrap_or(u32::MAX));
    record.lateness_max_ms = record.lateness_max_ms.max(late.as_secs_f64() * 1000.0);
    if late > Duration::from_millis(100) {
        record.frames_late_100ms += 1;
    }
}

/// When a call stops sending silence after its fixture.
pub(super) struct StopRule {
    /// Start of the fixture's last utterance, µs.
    last_start_us: u64,
    /// No reply by then: give up (the window after the last end of speech).
    give_up: Duration,
    /// Bot silence after the last reply before stopping.
    linger: Duration,
    /// Stop regardless.
    hard_stop: Duration,
}

impl StopRule {
    /// The rule of a call of `fx` with `settings`.
    pub(super) fn of(settings: &CallSettings, fx: &PreparedFixture) -> Self {
        let last = *fx
            .spans
            .last()
            .expect("a parsed sidecar has at least one utterance");
        let window = Duration::from_millis(settings.response_window_ms);
        let give_up = Duration::from_micros(last.end_us) + window;
        StopRule {
            last_start_us: last.start_us,
            give_up,
            linger: Duration::from_millis(settings.linger_ms),
            // A reply that started inside the window may finish playing; bounded anyway.
            hard_stop: give_up + Duration::from_secs(10),
        }
    }

    /// After the fixture, at `now` (from the start): stop once the last
    /// turn's reply has played out (bot silent for `linger`), or when the
    /// window after the last end of speech has passed with no reply, or at
    /// the hard stop; at once if the server closed.
    pub(super) fn now(&self, shared: &Shared, now: Duration) -> bool {
        if shared.closed.load(Ordering::Acquire) || now >= self.hard_stop {
            return true;
        }
        let last_audio = shared.last_bot_audio_us.load(Ordering::Acquire);
        let replied = last_audio > self.last_start_us + 1;
        if replied {
            now.saturating_sub(Duration::from_micros(last_audio - 1)) >= self.linger
        } else {
            now >= self.give_up
        }
    }
}

/// Reads until the server's `end` or the close; records arrivals.
async fn receive(
    mut stream: futures_util::stream::SplitStream<WsStream>,
    begin: Instant,
    shared: Arc<Shared>,
) -> Received {
    let mut out = Received::default();
    while let Some(msg) = stream.next().await {
        let at_us = begin.elapsed().as_micros() as u64;
        match msg {
            Ok(Message::Binary(b)) => {
                if turns::is_non_silent_pcm16(&b) {
                    out.bot_audio_us.push(at_us);
                    shared.last_bot_audio_us.store(at_us + 1, Ordering::Release);
                }
            }
            Ok(Message::Text(t)) => {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
                match v["type"].as_str() {
                    Some("turn_metrics") => out.turn_metrics.push(v),
                    Some("bot_text") => {
                        out.bot_texts.extend(v["text"].as_str().map(str::to_owned));
                    }
                    Some("clear") => out.clear_us.push(at_us),
                    Some("error") => out.error = Some(format!("error event: {t}")),
                    Some("end") => {
                        out.end_reason = v["reason"].as_str().map(str::to_string);
                        if !matches!(
                            out.end_reason.as_deref(),
                            Some("client_end") | Some("completed")
                        ) {
                            out.error
                                .get_or_insert_with(|| format!("server ended the call: {t}"));
                        }
                        break;
                    }
                    _ => {}
                }
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => {}
            Err(e) => {
                out.error.get_or_insert_with(|| format!("receive: {e}"));
                break;
            }
        }
    }
    shared.closed.store(true, Ordering::Release);
    out
}
