//! A fake phone carrier over a real websocket: `brisvox_transport`'s
//! [`CarrierEmulator`] builds the messages the carrier sends (its documented
//! shapes) and reads the commands the server sends back.

use std::time::Duration;

use brisvox_audio::wav::read_wav;
use brisvox_transport::carrier::emulator::{CarrierEmulator, ServerCommand};
use brisvox_transport::{AudioCodec, Carrier, Outbound, WireFormat};
use futures_util::{SinkExt, StreamExt};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::tungstenite::Message;

use super::{WAIT, Ws};

/// What the server did next.
#[derive(Debug)]
pub enum Heard {
    Command(ServerCommand),
    Closed(Option<u16>),
}

pub struct FakeCarrier {
    pub ws: Ws,
    pub emu: CarrierEmulator,
}

impl FakeCarrier {
    pub fn new(ws: Ws, carrier: Carrier, format: WireFormat) -> Self {
        Self::with_ids(ws, carrier, format, "call-1")
    }

    /// A carrier whose call id is `call_id`.
    pub fn with_ids(ws: Ws, carrier: Carrier, format: WireFormat, call_id: &str) -> Self {
        let emu = CarrierEmulator::new(carrier, format, "stream-1", call_id);
        Self { ws, emu }
    }

    pub async fn send(&mut self, out: Outbound) {
        let msg = match out {
            Outbound::Text(t) => Message::text(t),
            Outbound::Binary(b) => Message::binary(b),
        };
        self.ws.send(msg).await.expect("the server reads");
    }

    /// The greeting and start, with `parameters`.
    pub async fn open(&mut self, parameters: serde_json::Value) {
        let params = parameters.as_object().cloned().unwrap_or_default();
        for m in self.emu.opening(&params, "+15550100", "+15550199") {
            self.send(m).await;
        }
    }

    /// One 20 ms frame of a 440 Hz tone (or silence) in the stream's format.
    pub fn frame(&self, loud: bool, n: usize) -> Vec<u8> {
        let fmt = self.emu.format();
        let len = fmt.sample_rate_hz as usize / 50;
        let samples: Vec<i16> = (0..len)
            .map(|i| {
                let t = (n * len + i) as f32 / fmt.sample_rate_hz as f32;
                let a = if loud { 8000.0 } else { 0.0 };
                (a * (2.0 * std::f32::consts::PI * 440.0 * t).sin()) as i16
            })
            .collect();
        let mut out = Vec::new();
        fmt.codec.encode_to(&samples, &mut out);
        out
    }

    pub async fn media(&mut self, audio: &[u8]) {
        let m = self.emu.media(audio);
        self.send(m).await;
    }

    /// The server's next command, or its close.
    pub async fn next(&mut self) -> Heard {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("the server answered in time");
            let out = match msg {
                Some(Ok(Message::Text(t))) => Outbound::Text(t.as_str().to_owned()),
                Some(Ok(Message::Binary(b))) => Outbound::Binary(b.to_vec()),
                Some(Ok(Message::Close(f))) => {
                    return Heard::Closed(f.map(|f| u16::from(f.code)));
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return Heard::Closed(None),
            };
            let cmd = self.emu.parse_command(&out).unwrap_or_else(|e| {
                panic!("the server sent what the carrier cannot read ({e}): {out:?}")
            });
            return Heard::Command(cmd);
        }
    }

    /// Reads to the close, echoing marks; returns the close code.
    pub async fn until_close(&mut self) -> Option<u16> {
        loop {
            match self.next().await {
                Heard::Closed(code) => return code,
                Heard::Command(ServerCommand::Mark(name)) => {
                    let echo = self.emu.mark_echo(&name);
                    self.send(echo).await;
                }
                Heard::Command(_) => {}
            }
        }
    }
}

/// The format each carrier's emulated stream uses in the tests (A-law on
/// Telnyx, 16 kHz linear PCM on Vonage, 8 kHz on Exotel).
pub fn test_format(carrier: Carrier) -> WireFormat {
    let (codec, sample_rate_hz) = match carrier {
        Carrier::Twilio | Carrier::Plivo => (AudioCodec::Mulaw, 8000),
        Carrier::Telnyx => (AudioCodec::Alaw, 8000),
        Carrier::Vonage => (AudioCodec::Pcm16, 16000),
        Carrier::Exotel => (AudioCodec::Pcm16, 8000),
    };
    WireFormat {
        codec,
        sample_rate_hz,
    }
}

/// Bound on one call's whole exchange in [`talk_until`].
pub const CALL_LIMIT: Duration = Duration::from_secs(40);

/// What one call saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub audible_ms: usize,
    pub marks: usize,
    pub clears: usize,
}

/// The recorded phone prompt at the stream's rate, in 20 ms frames encoded
/// in the stream's codec.
pub fn speech(format: WireFormat) -> Vec<Vec<u8>> {
    let name = match format.sample_rate_hz {
        16000 => "phone_all_circuits_busy_now_16k",
        _ => "phone_all_circuits_busy_now_8k",
    };
    let path = format!("{}/../../fixtures/{name}.wav", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("fixture present");
    let samples = read_wav(&bytes).expect("valid WAV").to_mono();
    samples
        .chunks_exact(format.sample_rate_hz as usize / 50)
        .map(|c| {
            let mut out = Vec::new();
            format.codec.encode_to(c, &mut out);
            out
        })
        .collect()
}

/// Sends `frames` (then silence) in real time while handling the server's
/// commands, until `done`; echoes each mark at once when `echo_marks` (as a
/// carrier whose buffer plays at once), never otherwise.
pub async fn talk_until(
    fake: &mut FakeCarrier,
    frames: &[Vec<u8>],
    seen: &mut Seen,
    echo_marks: bool,
    done: impl Fn(&Seen) -> bool,
) {
    let format = fake.emu.format();
    let silence = fake.frame(false, 0);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let deadline = Instant::now() + CALL_LIMIT;
    let mut next = frames.iter();
    let mut decoded = Vec::new();
    while !done(seen) {
        assert!(
            Instant::now() < deadline,
            "{:?}: {seen:?}",
            fake.emu.carrier()
        );
        tokio::select! {
            _ = tick.tick() => {
                let f = next.next().unwrap_or(&silence).clone();
                fake.media(&f).await;
            }
            heard = fake.next() => match heard {
                Heard::Command(ServerCommand::Play(audio)) => {
                    format.codec.decode_to(&audio, &mut decoded);
                    if decoded.iter().any(|s| s.unsigned_abs() > 1000) {
                        seen.audible_ms += decoded.len() * 1000 / format.sample_rate_hz as usize;
                    }
                }
                Heard::Command(ServerCommand::Mark(name)) => {
                    seen.marks += 1;
                    if echo_marks {
                        let echo = fake.emu.mark_echo(&name);
                        fake.send(echo).await;
                    }
                }
                Heard::Command(ServerCommand::Clear) => {
                    seen.clears += 1;
                    if let Some(confirm) = fake.emu.cleared() {
                        fake.send(confirm).await;
                    }
                }
                Heard::Closed(code) => panic!("{:?} closed ({code:?}): {seen:?}", fake.emu.carrier()),
            },
        }
    }
}
