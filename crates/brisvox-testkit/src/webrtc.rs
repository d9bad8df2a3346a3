//! A WebRTC caller (feature `webrtc`): one str0m peer on a UDP socket with
//! one send-and-receive Opus audio track and one data channel, as
//! docs/WEBRTC.md asks of a client. It posts its offer to `/webrtc/offer`
//! ([`signal`]), speaks 20 ms frames ([`Caller::send_frame`]), decodes the
//! bot's audio as it arrives (no jitter buffer: each packet is decoded when
//! str0m hands it over) and keeps the data channel's events, each with its
//! arrival time.
//!
//! The one WebRTC client of the workspace: the server's end-to-end tests and
//! `brisvox-bench v2v --transports webrtc` both drive it. Errors are values
//! ([`CallerError`]): a benchmark must survive a misbehaving server; tests
//! `expect` them.
//!
//! Driving rule (str0m's): after every input, [`Caller::drive`] sends what
//! the peer has to send and returns its next timeout; [`Caller::step`]
//! waits for a datagram or that timeout and hands it over.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig, OpusError};
use str0m::change::{SdpAnswer, SdpPendingOffer};
use str0m::channel::ChannelId;
use str0m::format::Codec;
use str0m::media::{Direction, Frequency, MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, Input, Output, Rtc, RtcConfig, RtcError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// A decoded bot frame with a sample above this is audible, for
/// [`Caller::audible_frames`].
pub const AUDIBLE: u16 = 1000;

/// RTP time per 20 ms frame on Opus's 48 kHz clock.
const RTP_PER_FRAME: u64 = 960;

/// Largest datagram read.
const MAX_DATAGRAM: usize = 2048;

/// What went wrong on the caller's side of a call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallerError {
    /// The UDP or TCP socket failed.
    #[error("socket: {0}")]
    Socket(#[from] std::io::Error),
    /// str0m refused an input or an SDP.
    #[error("WebRTC: {0}")]
    Rtc(#[from] RtcError),
    /// The answer SDP did not parse.
    #[error("answer SDP: {0}")]
    Sdp(String),
    /// Opus failed to encode or decode.
    #[error("Opus: {0}")]
    Opus(#[from] OpusError),
    /// The signalling request was refused or its answer unreadable.
    #[error("signalling: {0}")]
    Signal(String),
    /// The call is not in a state for this (no track, no channel, no
    /// offer waiting).
    #[error("not ready: {0}")]
    NotReady(&'static str),
}

/// A decoded bot frame: when it was handed over, and its loudest sample.
#[derive(Debug, Clone, Copy)]
pub struct BotFrame {
    /// When the packet arrived (and was decoded).
    pub at: Instant,
    /// The largest absolute sample of the decoded 20 ms.
    pub peak: u16,
}

/// A data channel event and when it arrived.
#[derive(Debug, Clone)]
pub struct ChannelEvent {
    /// When it arrived.
    pub at: Instant,
    /// The JSON event (`{"type": ...}`).
    pub event: serde_json::Value,
}

/// A WebRTC caller: one str0m peer on one UDP socket.
pub struct Caller {
    rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    mid: Mid,
    channel: ChannelId,
    pending: Option<SdpPendingOffer>,
    /// The offer's SDP, to post to `/webrtc/offer`.
    pub offer: String,
    /// ICE and DTLS are up.
    pub connected: bool,
    /// The data channel is open.
    pub channel_open: bool,
    encoder: OpusEncoder,
    decoder: OpusDecoder,
    rtp: u64,
    buf: Vec<u8>,
    /// Every decoded bot frame, in arrival order.
    pub bot_frames: Vec<BotFrame>,
    /// The data channel's events, in arrival order.
    pub events: Vec<ChannelEvent>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("local", &self.local)
            .field("connected", &self.connected)
            .field("channel_open", &self.channel_open)
            .field("bot_frames", &self.bot_frames.len())
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

/// The caller's clock: the one place this module reads the time.
fn now() -> Instant {
    Instant::now()
}

impl Caller {
    /// A caller on a fresh socket bound to `bind` (port 0: any), its offer
    /// made, speaking and hearing PCM16 at `rate_hz` (8, 12, 16, 24 or 48
    /// kHz; RTP time is 48 kHz whatever the rate).
    pub async fn offer(bind: SocketAddr, rate_hz: u32) -> Result<Self, CallerError> {
        let socket = UdpSocket::bind(bind).await?;
        let local = socket.local_addr()?;
        let mut rtc = RtcConfig::new()
            .set_crypto_provider(Arc::new(str0m::crypto::from_feature_flags()))
            .clear_codecs()
            .enable_opus(true, false)
            .build(now());
        let candidate = Candidate::host(local, "udp").map_err(RtcError::from)?;
        rtc.add_local_candidate(candidate);
        let mut api = rtc.sdp_api();
        let mid = api.add_media(MediaKind::Audio, Direction::SendRecv, None, None, None);
        let channel = api.add_channel("brisvox".to_owned());
        let (offer, pending) = api.apply().ok_or(CallerError::NotReady("no offer made"))?;
        let encoder = OpusEncoder::new(OpusEncoderConfig {
            sample_rate: rate_hz,
            ..OpusEncoderConfig::default()
        })?;
        Ok(Caller {
            rtc,
            socket,
            local,
            mid,
            channel,
            pending: Some(pending),
            offer: offer.to_sdp_string(),
            connected: false,
            channel_open: false,
            encoder,
            decoder: OpusDecoder::new(rate_hz)?,
            rtp: 0,
            buf: vec![0; MAX_DATAGRAM],
            bot_frames: Vec::new(),
            events: Vec::new(),
        })
    }

    /// A caller on loopback at 16 kHz (the fixtures' rate), as the tests
    /// use it.
    pub async fn on_loopback() -> Result<Self, CallerError> {
        Self::offer(SocketAddr::from(([127, 0, 0, 1], 0)), 16_000).await
    }

    /// The caller's own socket address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Takes the server's answer SDP.
    pub fn accept(&mut self, answer: &str) -> Result<(), CallerError> {
        let answer =
            SdpAnswer::from_sdp_string(answer).map_err(|e| CallerError::Sdp(e.to_string()))?;
        let pending = self
            .pending
            .take()
            .ok_or(CallerError::NotReady("no offer waiting for an answer"))?;
        self.rtc.sdp_api().accept_answer(pending, answer)?;
        Ok(())
    }

    /// Sends what str0m has to send and handles its events; returns its
    /// next timeout.
    pub async fn drive(&mut self) -> Result<Instant, CallerError> {
        loop {
            match self.rtc.poll_output()? {
                Output::Timeout(at) => return Ok(at),
                Output::Transmit(t) => {
                    // UDP: a send that fails is a datagram lost, as on a network.
                    let _ = self.socket.send_to(&t.contents, t.destination).await;
                }
                Output::Event(e) => self.on_event(e)?,
            }
        }
    }

    fn on_event(&mut self, event: Event) -> Result<(), CallerError> {
        match event {
            Event::Connected => self.connected = true,
            Event::ChannelOpen(id, _) if id == self.channel => self.channel_open = true,
            Event::ChannelData(d) if d.id == self.channel => {
                let event = serde_json::from_slice(&d.data)
                    .map_err(|e| CallerError::Signal(format!("data channel: not JSON: {e}")))?;
                self.events.push(ChannelEvent { at: now(), event });
            }
            Event::MediaData(d) if d.mid == self.mid => {
                let pcm = self.decoder.decode(&d.data)?;
                let peak = pcm.iter().map(|s| s.unsigned_abs()).max().unwrap_or(0);
                self.bot_frames.push(BotFrame { at: now(), peak });
            }
            _ => {}
        }
        Ok(())
    }

    /// Waits for a datagram or `until` and hands it to str0m.
    ///
    /// # Cancel safety
    /// Not cancel safe: a datagram read and not yet handed over is lost.
    pub async fn step(&mut self, until: Instant) -> Result<(), CallerError> {
        let deadline = tokio::time::Instant::from_std(until);
        let received = tokio::select! {
            r = self.socket.recv_from(&mut self.buf) => Some(r?),
            () = tokio::time::sleep_until(deadline) => None,
        };
        let input = match received {
            Some((n, source)) => {
                let contents = self.buf[..n]
                    .try_into()
                    .map_err(|e| CallerError::Signal(format!("datagram from {source}: {e:?}")))?;
                Input::Receive(
                    now(),
                    Receive {
                        proto: Protocol::Udp,
                        source,
                        destination: self.local,
                        contents,
                    },
                )
            }
            None => Input::Timeout(now()),
        };
        self.rtc.handle_input(input)?;
        Ok(())
    }

    /// Drives the peer until `done` holds; `Err` when `deadline` passes
    /// first (naming `what`).
    pub async fn run_until(
        &mut self,
        deadline: Instant,
        what: &str,
        mut done: impl FnMut(&Caller) -> bool,
    ) -> Result<(), CallerError> {
        loop {
            let timeout = self.drive().await?;
            if done(self) {
                return Ok(());
            }
            if now() >= deadline {
                let msg = format!("{what}: not in time ({self:?})");
                return Err(CallerError::Signal(msg));
            }
            self.step(timeout.min(deadline)).await?;
        }
    }

    /// Sends one 20 ms frame at the caller's rate as an Opus packet.
    pub fn send_frame(&mut self, pcm: &[i16]) -> Result<(), CallerError> {
        let packet = self.encoder.encode(pcm)?.to_vec();
        let writer = self
            .rtc
            .writer(self.mid)
            .ok_or(CallerError::NotReady("no audio track"))?;
        let pt = writer
            .payload_params()
            .find(|p| p.spec().codec == Codec::Opus)
            .ok_or(CallerError::NotReady("Opus not negotiated"))?
            .pt();
        let time = MediaTime::new(self.rtp, Frequency::FORTY_EIGHT_KHZ);
        writer.write(pt, now(), time, packet)?;
        self.rtp += RTP_PER_FRAME;
        Ok(())
    }

    /// Sends a text message on the data channel.
    pub fn send_text(&mut self, text: &str) -> Result<(), CallerError> {
        let mut ch = self
            .rtc
            .channel(self.channel)
            .ok_or(CallerError::NotReady("the data channel is not open"))?;
        if ch.write(false, text.as_bytes())? {
            Ok(())
        } else {
            Err(CallerError::NotReady("the data channel's buffer is full"))
        }
    }

    /// Bot frames decoded with a sample above [`AUDIBLE`].
    pub fn audible_frames(&self) -> usize {
        self.bot_frames.iter().filter(|f| f.peak > AUDIBLE).count()
    }

    /// Whether an event of this type arrived.
    pub fn saw(&self, kind: &str) -> bool {
        self.event(kind).is_some()
    }

    /// The first event of this type.
    pub fn event(&self, kind: &str) -> Option<&serde_json::Value> {
        self.events
            .iter()
            .map(|e| &e.event)
            .find(|e| e["type"] == kind)
    }

    /// The text of the first final transcript.
    pub fn final_transcript(&self) -> Option<&str> {
        self.events
            .iter()
            .map(|e| &e.event)
            .find(|e| e["type"] == "transcript" && e["final"] == true)
            .and_then(|e| e["text"].as_str())
    }

    /// A final transcript, the bot's speech (audible) and the turn's metrics.
    pub fn answered(&self) -> bool {
        self.final_transcript().is_some()
            && self.saw("bot_speaking_started")
            && self.saw("turn_metrics")
            && self.audible_frames() >= 5
    }

    /// Speaks `speech` (at the caller's rate) in real time, on an absolute
    /// 20 ms grid from the connection, then silence, until the call is
    /// [`Caller::answered`]; `Err` at `deadline`.
    pub async fn talk_until_answered(
        &mut self,
        speech: &[i16],
        deadline: Instant,
    ) -> Result<(), CallerError> {
        let frame_len = self.encoder.frame_samples(20);
        let mut frames = speech.chunks_exact(frame_len);
        let silence = vec![0i16; frame_len];
        let mut next_frame = now();
        while !self.answered() {
            if now() >= deadline {
                let msg = format!("no complete answer in time ({self:?})");
                return Err(CallerError::Signal(msg));
            }
            let mut until = self.drive().await?;
            if self.connected && self.channel_open {
                if now() >= next_frame {
                    let frame = frames.next().unwrap_or(&silence);
                    self.send_frame(frame)?;
                    next_frame += Duration::from_millis(20);
                    continue;
                }
                until = until.min(next_frame);
            } else {
                next_frame = now();
            }
            self.step(until.min(deadline)).await?;
        }
        Ok(())
    }

    /// Sends `end` on the data channel and waits for the server's `end`;
    /// returns its reason.
    pub async fn end(&mut self, deadline: Instant) -> Result<String, CallerError> {
        self.send_text(r#"{"type":"end"}"#)?;
        self.run_until(deadline, "the server's end", |c| c.saw("end"))
            .await?;
        let reason = self.event("end").and_then(|e| e["reason"].as_str());
        Ok(reason.unwrap_or_default().to_owned())
    }
}

/// Posts `offer` to `POST {path}` of the server at `addr` as call
/// `call_id` (`path` may carry `?token=`); returns the answer, checked to be
/// one (HTTP 200, `type` answer, the same `call_id`).
pub async fn signal(
    addr: SocketAddr,
    path: &str,
    offer: &str,
    call_id: &str,
) -> Result<serde_json::Value, CallerError> {
    let body = serde_json::json!({"type": "offer", "sdp": offer, "call_id": call_id}).to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await?;
    let reply = String::from_utf8_lossy(&reply);
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .ok_or_else(|| CallerError::Signal(format!("no HTTP answer: {reply}")))?;
    if head.split_whitespace().nth(1) != Some("200") {
        let status = head.lines().next().unwrap_or_default();
        return Err(CallerError::Signal(format!("refused: {status} {body}")));
    }
    let answer: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| CallerError::Signal(format!("answer not JSON: {e}: {body}")))?;
    if answer["type"] != "answer" || answer["call_id"] != call_id || !answer["sdp"].is_string() {
        return Err(CallerError::Signal(format!("not an answer: {answer}")));
    }
    Ok(answer)
}
