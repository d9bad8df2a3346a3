//! One call over a phone carrier's route (`/twilio`, `/telnyx`, `/plivo`,
//! `/vonage`, `/exotel`), placed as that carrier places it: its greeting and
//! start, the fixture's caller audio as its media messages in the stream's
//! encoding (mu-law, A-law or linear PCM at the fixture's rate) in real time,
//! and the bot's audio played out in real time on the caller's side, with
//! each mark (Plivo's checkpoint, Vonage's notify) echoed when the audio
//! before it has played; a clear drops the unplayed audio and echoes the
//! pending marks at once (confirmed where the carrier confirms a clear). The
//! messages are [`CarrierEmulator`]'s, the carrier side of the transport's
//! own codecs; one code path serves every carrier.
//!
//! Arrivals are recorded like the `/call` client's ([`super::client`]): the
//! arrival time of each non-silent bot message. Carriers have no
//! `turn_metrics` or `end` event; the server ends a call by closing the socket.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use brisvox_transport::carrier::emulator::{CarrierEmulator, ServerCommand};
use brisvox_transport::{
    AudioCodec, Carrier, ExotelStream, MediaStream, Outbound, PlivoStream, StreamEvent,
    TelnyxStream, TwilioDecoder, TwilioStream, VonageStream, WireFormat,
};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::client::{
    CallRecord, CallSettings, PreparedFixture, Received, Shared, StopRule, WsStream, connect,
    join_receiver, record_lateness,
};
use super::{schedule, turns};

/// The carrier whose route `url` is (its path ends in `/twilio`, `/telnyx`,
/// `/plivo`, `/vonage` or `/exotel`), if any.
pub(crate) fn carrier_of_url(url: &str) -> Option<Carrier> {
    let path = url.split(['?', '#']).next()?;
    let last = path.rsplit('/').next()?;
    Carrier::ALL.into_iter().find(|c| c.as_str() == last)
}

/// The encoding a carrier streams when none is asked for: mu-law on the
/// G.711 carriers, linear PCM on Vonage and Exotel.
fn default_codec(carrier: Carrier) -> AudioCodec {
    match carrier {
        Carrier::Twilio | Carrier::Telnyx | Carrier::Plivo => AudioCodec::Mulaw,
        Carrier::Vonage | Carrier::Exotel => AudioCodec::Pcm16,
    }
}

/// brisvox's own codec of `carrier`'s stream.
fn server_codec(carrier: Carrier) -> Box<dyn MediaStream + Send> {
    match carrier {
        Carrier::Twilio => Box::new(TwilioStream::new(TwilioDecoder::default())),
        Carrier::Telnyx => Box::new(TelnyxStream::default()),
        Carrier::Plivo => Box::new(PlivoStream::default()),
        Carrier::Vonage => Box::new(VonageStream::default()),
        Carrier::Exotel => Box::new(ExotelStream::default()),
    }
}

/// The format of a call over `carrier` in `codec` (its default when `None`)
/// at `rate_hz`, when the carrier streams it: the emulated carrier's start,
/// read by brisvox's own codec of that carrier, must announce that format.
pub(crate) fn wire_format(
    carrier: Carrier,
    codec: Option<AudioCodec>,
    rate_hz: u32,
) -> Result<WireFormat, String> {
    let format = WireFormat {
        codec: codec.unwrap_or(default_codec(carrier)),
        sample_rate_hz: rate_hz,
    };
    let refused = |why: String| {
        format!(
            "/{} does not stream {} at {rate_hz} Hz ({why})",
            carrier.as_str(),
            format.codec.as_str()
        )
    };
    let mut emu = CarrierEmulator::new(carrier, format, "probe", "probe");
    let mut stream = server_codec(carrier);
    for msg in emu.opening(&serde_json::Map::new(), "+15550100", "+15550199") {
        let event = match &msg {
            Outbound::Text(t) => stream.decode_text(t),
            Outbound::Binary(b) => stream.decode_binary(b),
        };
        match event.map_err(|e| refused(e.to_string()))? {
            StreamEvent::Start(start) if start.format == format => return Ok(format),
            StreamEvent::Start(start) => {
                let got = start.format;
                let says = format!(
                    "its start says {} at {} Hz",
                    got.codec.as_str(),
                    got.sample_rate_hz
                );
                return Err(refused(says));
            }
            _ => {}
        }
    }
    Err(refused("no start".into()))
}

type Sink = futures_util::stream::SplitSink<WsStream, Message>;

/// Runs one call over `carrier`'s route to completion; never panics on a
/// server's misbehaviour.
pub(crate) async fn run_call(
    settings: &CallSettings,
    fx: Arc<PreparedFixture>,
    call_id: &str,
    carrier: Carrier,
) -> CallRecord {
    let mut record = CallRecord::empty(&fx);
    let window_us = settings.response_window_ms * 1000;
    let format = match wire_format(carrier, settings.codec, fx.fixture.sidecar.sample_rate_hz) {
        Ok(f) => f,
        Err(e) => {
            record.error = Some(format!("{}: {e}", fx.fixture.sidecar.name));
            record.turns = turns::classify(&fx.spans, &[], window_us);
            return record;
        }
    };
    let mut emu = CarrierEmulator::new(carrier, format, call_id, call_id);
    let ws = match open(settings, &mut emu).await {
        Ok(ws) => ws,
        Err(e) => {
            record.error = Some(e);
            record.turns = turns::classify(&fx.spans, &[], window_us);
            return record;
        }
    };
    let (sink, stream) = ws.split();
    let begin = Instant::now();
    let shared = Arc::new(Shared::default());
    let (echo_tx, echo_rx) = mpsc::unbounded_channel();
    let receiver = tokio::spawn(receive(stream, begin, shared.clone(), emu.clone(), echo_tx));
    let mut call = Caller {
        sink,
        emu,
        echoes: echo_rx,
        waiting: VecDeque::new(),
    };
    let sent = call
        .send_schedule(settings, &fx, begin, &shared, &mut record)
        .await;
    call.hang_up(&shared).await;
    let received = join_receiver(receiver, "the server did not close within 3 s of the stop").await;
    record.error = sent.err().or(received.error);
    record.bot_audio_messages = received.bot_audio_us.len() as u64;
    record.turns = turns::classify(&fx.spans, &received.bot_audio_us, window_us);
    record.clears = received.clear_us.len() as u32;
    record.clear_us = received.clear_us;
    record
}

/// Connects and sends the carrier's greeting and start.
async fn open(settings: &CallSettings, emu: &mut CarrierEmulator) -> Result<WsStream, String> {
    let mut ws = connect(settings).await?;
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

fn to_outbound(msg: Message) -> Option<Outbound> {
    match msg {
        Message::Text(t) => Some(Outbound::Text(t.to_string())),
        Message::Binary(b) => Some(Outbound::Binary(b.to_vec())),
        _ => None,
    }
}

/// What the receiver asks the sender to send back.
#[derive(Debug)]
enum Echo {
    /// Echo the mark `name` at `due_us` (µs from `begin`), when the caller
    /// has heard the audio before it.
    Mark { due_us: u64, name: String },
    /// A clear at `at_us`: every mark waiting is due then.
    Clear { at_us: u64 },
}

/// The caller's side of the socket: the write half and the marks to echo.
struct Caller {
    sink: Sink,
    emu: CarrierEmulator,
    echoes: mpsc::UnboundedReceiver<Echo>,
    /// Marks to echo, with the µs from `begin` when each is due.
    waiting: VecDeque<(u64, String)>,
}

impl Caller {
    async fn send(&mut self, out: Outbound, what: &str) -> Result<(), String> {
        self.sink
            .send(to_message(out))
            .await
            .map_err(|e| format!("send {what}: {e}"))
    }

    /// Sends the fixture then silence, frame `k` at `begin + (k+1)·20 ms`,
    /// and each mark echo when it is due.
    async fn send_schedule(
        &mut self,
        settings: &CallSettings,
        fx: &PreparedFixture,
        begin: Instant,
        shared: &Shared,
        record: &mut CallRecord,
    ) -> Result<(), String> {
        let stop = StopRule::of(settings, fx);
        let begin_tokio = tokio::time::Instant::from_std(begin);
        let codec = self.emu.format().codec;
        let (mut samples, mut encoded) = (Vec::new(), Vec::new());
        for k in 0u64.. {
            let due = schedule::deadline(k);
            let frame = fx.frames.get(k as usize);
            if frame.is_none() && stop.now(shared, due) {
                return Ok(());
            }
            tokio::time::sleep_until(begin_tokio + due).await;
            AudioCodec::Pcm16.decode_to(frame.unwrap_or(&fx.silence), &mut samples);
            codec.encode_to(&samples, &mut encoded);
            let media = self.emu.media(&encoded);
            self.send(media, &format!("frame {k}")).await?;
            record_lateness(record, due, begin);
            self.echo_due(begin).await?;
        }
        Ok(())
    }

    /// Echoes the marks whose audio has played by now.
    async fn echo_due(&mut self, begin: Instant) -> Result<(), String> {
        while let Ok(echo) = self.echoes.try_recv() {
            match echo {
                Echo::Mark { due_us, name } => self.waiting.push_back((due_us, name)),
                Echo::Clear { at_us } => {
                    self.waiting.iter_mut().for_each(|(due, _)| *due = at_us);
                    if let Some(cleared) = self.emu.cleared() {
                        self.send(cleared, "clear confirmation").await?;
                    }
                }
            }
        }
        let now_us = begin.elapsed().as_micros() as u64;
        while self.waiting.front().is_some_and(|(due, _)| *due <= now_us) {
            let (_, name) = self.waiting.pop_front().expect("checked above");
            let echo = self.emu.mark_echo(&name);
            self.send(echo, "mark").await?;
        }
        Ok(())
    }

    /// Ends the stream as the carrier does: its stop where it has one (the
    /// server then closes), else the socket's close.
    async fn hang_up(&mut self, shared: &Shared) {
        match self.emu.stop() {
            Some(stop) => {
                let send = self.sink.send(to_message(stop));
                let _ = tokio::time::timeout(Duration::from_secs(2), send).await;
            }
            None => shared.hung_up.store(true, Ordering::Release),
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.sink.close()).await;
    }
}

/// Where the caller's playout stands.
struct Playout {
    format: WireFormat,
    /// µs from `begin` when the audio received so far ends playing.
    ends_us: u64,
    samples: Vec<i16>,
}

impl Playout {
    /// Queues `audio` arrived at `at_us`; true when it is audible.
    fn play(&mut self, audio: &[u8], at_us: u64) -> bool {
        self.format.codec.decode_to(audio, &mut self.samples);
        let play_us = audio.len() as u64 * 1000 / self.format.bytes_per_ms().max(1) as u64;
        self.ends_us = self.ends_us.max(at_us) + play_us;
        turns::is_non_silent(&self.samples)
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
    let mut playout = Playout {
        format: emu.format(),
        ends_us: 0,
        samples: Vec::new(),
    };
    while let Some(msg) = stream.next().await {
        let at_us = begin.elapsed().as_micros() as u64;
        let msg = match msg {
            Ok(Message::Close(_)) => break,
            Ok(m) => match to_outbound(m) {
                Some(o) => o,
                None => continue,
            },
            // The server may drop the socket without echoing the caller's
            // close: the call was over.
            Err(_) if shared.hung_up.load(Ordering::Acquire) => break,
            Err(e) => {
                out.error.get_or_insert_with(|| format!("receive: {e}"));
                break;
            }
        };
        match emu.parse_command(&msg) {
            Ok(ServerCommand::Play(audio)) => {
                if playout.play(&audio, at_us) {
                    out.bot_audio_us.push(at_us);
                    shared.last_bot_audio_us.store(at_us + 1, Ordering::Release);
                }
            }
            Ok(ServerCommand::Mark(name)) => {
                let due_us = playout.ends_us.max(at_us);
                let _ = echoes.send(Echo::Mark { due_us, name });
            }
            Ok(ServerCommand::Clear) => {
                out.clear_us.push(at_us);
                playout.ends_us = at_us;
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
    fn carrier_urls_are_recognised() {
        assert_eq!(
            carrier_of_url("ws://127.0.0.1:8080/twilio"),
            Some(Carrier::Twilio)
        );
        assert_eq!(
            carrier_of_url("ws://127.0.0.1:8080/telnyx?token=x"),
            Some(Carrier::Telnyx)
        );
        for c in Carrier::ALL {
            let url = format!("ws://h:1/{}", c.as_str());
            assert_eq!(carrier_of_url(&url), Some(c));
        }
        assert_eq!(carrier_of_url("ws://127.0.0.1:8080/call"), None);
        assert_eq!(carrier_of_url("ws://127.0.0.1:8080/twilio/x"), None);
        assert_eq!(carrier_of_url("ws://127.0.0.1:8080/twiliox"), None);
    }

    #[test]
    fn each_carrier_streams_what_it_documents() {
        use AudioCodec::{Alaw, Mulaw, Pcm16};
        let ok = |c, codec, rate| wire_format(c, codec, rate).map(|f| (f.codec, f.sample_rate_hz));
        assert_eq!(ok(Carrier::Twilio, None, 8000), Ok((Mulaw, 8000)));
        assert_eq!(ok(Carrier::Telnyx, Some(Alaw), 8000), Ok((Alaw, 8000)));
        assert_eq!(ok(Carrier::Plivo, Some(Pcm16), 16000), Ok((Pcm16, 16000)));
        assert_eq!(ok(Carrier::Vonage, None, 16000), Ok((Pcm16, 16000)));
        assert_eq!(ok(Carrier::Exotel, None, 8000), Ok((Pcm16, 8000)));
        for (c, codec, rate) in [
            (Carrier::Twilio, Some(Alaw), 8000),
            (Carrier::Twilio, None, 16000),
            (Carrier::Telnyx, Some(Pcm16), 8000),
            (Carrier::Plivo, Some(Alaw), 8000),
            (Carrier::Plivo, None, 16000),
            (Carrier::Vonage, Some(Mulaw), 8000),
            (Carrier::Exotel, None, 11025),
        ] {
            let err = wire_format(c, codec, rate).expect_err("not offered");
            assert!(
                err.starts_with(&format!("/{} does not stream", c.as_str())),
                "{err}"
            );
        }
    }
}
