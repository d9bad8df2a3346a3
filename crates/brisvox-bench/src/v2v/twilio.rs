//! One call over `/twilio`, as Twilio places it: the `connected` and `start`
//! messages, the fixture's caller audio as mu-law `media` messages in real
//! time, and the bot's `media` played out in real time on the caller's side,
//! with each `mark` echoed when the audio before it has played (a `clear`
//! drops the unplayed audio and echoes the pending marks at once, as Twilio
//! does). The messages are [`CarrierEmulator`]'s, the carrier side of the
//! transport's own codec. The fixture must be 8 kHz (Twilio's rate).
//!
//! Arrivals are recorded like the `/call` client's ([`super::client`]): the
//! arrival time of each non-silent bot message. Twilio has no `turn_metrics`
//! or `end` event; the server ends a call by closing the socket.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use brisvox_audio::g711;
use brisvox_transport::carrier::emulator::{CarrierEmulator, ServerCommand};
use brisvox_transport::carrier::{Carrier, Outbound, WireFormat};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::client::{
    CallRecord, CallSettings, PreparedFixture, Received, Shared, WsStream, connect_error,
    should_stop,
};
use super::{schedule, turns};

/// Twilio's sample rate, Hz.
pub(crate) const TWILIO_RATE_HZ: u32 = 8000;

/// True when `url` is a `/twilio` route.
pub(crate) fn is_twilio_url(url: &str) -> bool {
    url.split(['?', '#'])
        .next()
        .is_some_and(|path| path.ends_with("/twilio"))
}

type Sink = futures_util::stream::SplitSink<WsStream, Message>;

/// Runs one Twilio call to completion; never panics on a server's misbehaviour.
pub(crate) async fn run_call(
    settings: &CallSettings,
    fx: Arc<PreparedFixture>,
    call_id: &str,
) -> CallRecord {
    let mut record = CallRecord::empty(&fx);
    let window_us = settings.response_window_ms * 1000;
    if fx.fixture.sidecar.sample_rate_hz != TWILIO_RATE_HZ {
        record.error = Some(format!(
            "/twilio needs an 8 kHz fixture; {} is {} Hz",
            fx.fixture.sidecar.name, fx.fixture.sidecar.sample_rate_hz
        ));
        record.turns = turns::classify(&fx.spans, &[], window_us);
        return record;
    }
    let mut emu = CarrierEmulator::new(Carrier::Twilio, WireFormat::MULAW_8K, call_id, call_id);
    let ws = match open(settings, &mut emu).await {
        Ok(ws) => ws,
        Err(e) => {
            record.error = Some(e);
            record.turns = turns::classify(&fx.spans, &[], window_us);
            return record;
        }
    };
    let (mut sink, stream) = ws.split();
    let begin = Instant::now();
    let shared = Arc::new(Shared::default());
    let (echo_tx, echo_rx) = mpsc::unbounded_channel();
    let receiver = tokio::spawn(receive(stream, begin, shared.clone(), emu.clone(), echo_tx));
    let sent = send_schedule(
        &mut sink,
        settings,
        &fx,
        begin,
        &shared,
        &mut emu,
        echo_rx,
        &mut record,
    )
    .await;
    if let Some(Outbound::Text(stop)) = emu.stop() {
        let _ = tokio::time::timeout(Duration::from_secs(2), sink.send(Message::text(stop))).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
    let received = match tokio::time::timeout(Duration::from_secs(3), receiver).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Received {
            error: Some(format!("receiver task: {e}")),
            ..Received::default()
        },
        Err(_) => Received {
            error: Some("the server did not close within 3 s of the stop".into()),
            ..Received::default()
        },
    };
    record.error = sent.err().or(received.error);
    record.bot_audio_messages = received.bot_audio_us.len() as u64;
    record.turns = turns::classify(&fx.spans, &received.bot_audio_us, window_us);
    record.clears = received.clear_us.len() as u32;
    record.clear_us = received.clear_us;
    record
}

/// Connects and sends Twilio's `connected` and `start`.
async fn open(settings: &CallSettings, emu: &mut CarrierEmulator) -> Result<WsStream, String> {
    let limit = Duration::from_millis(settings.connect_timeout_ms);
    let (mut ws, _) = tokio::time::timeout(
        limit,
        tokio_tungstenite::connect_async(settings.url.as_str()),
    )
    .await
    .map_err(|_| "connect timed out".to_string())?
    .map_err(connect_error)?;
    for msg in emu.opening(&serde_json::Map::new(), "+15550100", "+15550199") {
        ws.send(to_message(msg))
            .await
            .map_err(|e| format!("send start: {e}"))?;
    }
    Ok(ws)
}

fn to_message(o: Outbound) -> Message {
    match o {
        Outbound::Text(t) => Message::text(t),
        Outbound::Binary(b) => Message::binary(b),
    }
}

/// What the receiver asks the sender to send back.
#[derive(Debug)]
enum Echo {
    /// Echo the mark `name` at `due_us` (µs from `begin`), when the caller
    /// has heard the audio before it.
    Mark { due_us: u64, name: String },
    /// A `clear` at `at_us`: every mark waiting is due then.
    Clear { at_us: u64 },
}

/// Sends the fixture then silence, frame `k` at `begin + (k+1)·20 ms`, and
/// each mark echo when it is due.
#[allow(clippy::too_many_arguments)]
async fn send_schedule(
    sink: &mut Sink,
    settings: &CallSettings,
    fx: &PreparedFixture,
    begin: Instant,
    shared: &Shared,
    emu: &mut CarrierEmulator,
    mut echoes: mpsc::UnboundedReceiver<Echo>,
    record: &mut CallRecord,
) -> Result<(), String> {
    let last = *fx
        .spans
        .last()
        .expect("a parsed sidecar has at least one utterance");
    let give_up =
        Duration::from_micros(last.end_us) + Duration::from_millis(settings.response_window_ms);
    let linger = Duration::from_millis(settings.linger_ms);
    let hard_stop = give_up + Duration::from_secs(10);
    let begin_tokio = tokio::time::Instant::from_std(begin);
    let mut mulaw = vec![0u8; schedule::frame_samples(TWILIO_RATE_HZ)];
    let mut waiting: VecDeque<(u64, String)> = VecDeque::new();
    for k in 0u64.. {
        let due = schedule::deadline(k);
        let frame = fx.frames.get(k as usize);
        if frame.is_none() && should_stop(shared, last.start_us, due, give_up, linger, hard_stop) {
            return Ok(());
        }
        tokio::time::sleep_until(begin_tokio + due).await;
        encode_mulaw(frame.unwrap_or(&fx.silence), &mut mulaw);
        sink.send(to_message(emu.media(&mulaw)))
            .await
            .map_err(|e| format!("send frame {k}: {e}"))?;
        record_lateness(record, due, begin);
        while let Ok(echo) = echoes.try_recv() {
            match echo {
                Echo::Mark { due_us, name } => waiting.push_back((due_us, name)),
                Echo::Clear { at_us } => waiting.iter_mut().for_each(|(due, _)| *due = at_us),
            }
        }
        let now_us = begin.elapsed().as_micros() as u64;
        while waiting.front().is_some_and(|(due, _)| *due <= now_us) {
            let (_, name) = waiting.pop_front().expect("checked above");
            sink.send(to_message(emu.mark_echo(&name)))
                .await
                .map_err(|e| format!("send mark: {e}"))?;
        }
    }
    Ok(())
}

fn encode_mulaw(pcm16_le: &[u8], out: &mut [u8]) {
    for (code, s) in out.iter_mut().zip(pcm16_le.chunks_exact(2)) {
        *code = g711::G711Law::MuLaw.encode(i16::from_le_bytes([s[0], s[1]]));
    }
}

fn record_lateness(record: &mut CallRecord, due: Duration, begin: Instant) {
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

/// Reads until the server closes; records arrivals and schedules mark echoes.
async fn receive(
    mut stream: futures_util::stream::SplitStream<WsStream>,
    begin: Instant,
    shared: Arc<Shared>,
    emu: CarrierEmulator,
    echoes: mpsc::UnboundedSender<Echo>,
) -> Received {
    let mut out = Received::default();
    // µs from `begin` when the audio received so far ends playing.
    let mut playout_ends_us = 0u64;
    let mut pcm = Vec::new();
    while let Some(msg) = stream.next().await {
        let at_us = begin.elapsed().as_micros() as u64;
        let text = match msg {
            Ok(Message::Text(t)) => t,
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(e) => {
                out.error.get_or_insert_with(|| format!("receive: {e}"));
                break;
            }
        };
        match emu.parse_command(&Outbound::Text(text.to_string())) {
            Ok(ServerCommand::Play(audio)) => {
                pcm.clear();
                pcm.extend(
                    audio
                        .iter()
                        .flat_map(|&c| g711::ulaw_decode(c).to_le_bytes()),
                );
                if turns::is_non_silent_pcm16(&pcm) {
                    out.bot_audio_us.push(at_us);
                    shared.last_bot_audio_us.store(at_us + 1, Ordering::Release);
                }
                let play_us = audio.len() as u64 * 1_000_000 / u64::from(TWILIO_RATE_HZ);
                playout_ends_us = playout_ends_us.max(at_us) + play_us;
            }
            Ok(ServerCommand::Mark(name)) => {
                let due_us = playout_ends_us.max(at_us);
                let _ = echoes.send(Echo::Mark { due_us, name });
            }
            Ok(ServerCommand::Clear) => {
                out.clear_us.push(at_us);
                playout_ends_us = at_us;
                let _ = echoes.send(Echo::Clear { at_us });
            }
            Err(e) => {
                out.error
                    .get_or_insert_with(|| format!("bad message from the server: {e}"));
            }
        }
    }
    shared.closed.store(true, Ordering::Release);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_urls_are_recognised() {
        assert!(is_twilio_url("ws://127.0.0.1:8080/twilio"));
        assert!(is_twilio_url("ws://127.0.0.1:8080/twilio?token=x"));
        assert!(!is_twilio_url("ws://127.0.0.1:8080/call"));
        assert!(!is_twilio_url("ws://127.0.0.1:8080/twilio/x"));
    }
}
