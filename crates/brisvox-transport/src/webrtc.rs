//! WebRTC, sans-IO: one call's peer connection (`docs/WEBRTC.md`).
//!
//! [`WebRtcPeer`] wraps a [str0m](https://docs.rs/str0m) `Rtc` (itself
//! sans-IO) set up as an ICE-lite answerer with one Opus audio track and the
//! data channel the client opens. It owns no socket and reads no clock: the
//! server's adapter feeds it datagrams ([`WebRtcPeer::handle_receive`]) and
//! timeouts ([`WebRtcPeer::handle_timeout`]), then calls
//! [`WebRtcPeer::poll_output`] until it returns [`PeerOutput::Timeout`],
//! sending each [`PeerOutput::Transmit`] and acting on each
//! [`PeerOutput::Event`]; after each poll it drains the caller's audio with
//! [`WebRtcPeer::pop_frame`].
//!
//! Audio in: Opus packets are decoded straight at the engine's 16 kHz (libopus
//! resamples inside the decoder), a gap in RTP time is filled by FEC from the
//! packet after it and concealment before that, and the PCM is cut into
//! 20 ms frames. Audio out: 48 kHz frames (the engine's framer resamples to
//! the transport's rate) encoded to Opus with in-band FEC. Data channel: the
//! client's text messages are the `/call` protocol's controls (`say`, `dtmf`,
//! `end`), decoded by the same [`ClientMessageDecoder`]; the server's events
//! are the `/call` protocol's JSON events, sent as text.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig, OpusError};
use str0m::change::SdpOffer;
use str0m::channel::ChannelId;
use str0m::crypto::CryptoProvider;
use str0m::format::Codec;
use str0m::media::{Frequency, MediaData, MediaKind, MediaTime, Mid, Pt};
use str0m::net::{DatagramRecv, Protocol, Receive};
use str0m::{Candidate, Event, IceConnectionState, Input, Output, Rtc, RtcConfig, RtcError};

use crate::brisvox_ws::DecoderLimits;
use crate::brisvox_ws::{ClientEvent, ClientMessage, ClientMessageDecoder, DecodeError};

/// The rate of the audio the peer sends (Opus's, RFC 7587), in Hz: the
/// engine frames its answer at this rate for a WebRTC call.
pub const OUTPUT_RATE_HZ: u32 = 48_000;

/// The rate of the caller's frames from [`WebRtcPeer::pop_frame`], in Hz.
pub const INPUT_RATE_HZ: u32 = 16_000;

/// Samples in one 20 ms input frame.
const INPUT_FRAME: usize = INPUT_RATE_HZ as usize / 50;

/// Samples in one 20 ms output frame.
pub const OUTPUT_FRAME: usize = OUTPUT_RATE_HZ as usize / 50;

/// Most lost audio filled in after a gap, in 20 ms frames (100 ms); a longer
/// gap (the caller muted, a network stall) resumes with the next packet.
const MAX_FILLED_FRAMES: u64 = 5;

/// Bound on decoded caller audio waiting to be taken, in samples (200 ms).
const MAX_PENDING_SAMPLES: usize = 10 * INPUT_FRAME;

/// Bound on events waiting for the data channel to open.
const MAX_QUEUED_EVENTS: usize = 64;

/// Why the peer could not be set up or refused input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebRtcError {
    /// The offer is not SDP str0m can read.
    #[error("the offer is not valid SDP: {0}")]
    BadOffer(String),
    /// str0m refused the offer or an input.
    #[error("WebRTC: {0}")]
    Rtc(#[from] RtcError),
    /// The codec could not be set up.
    #[error(transparent)]
    Opus(#[from] OpusError),
    /// A candidate address str0m does not take.
    #[error("bad candidate address {0}")]
    Candidate(SocketAddr),
}

/// What the peer tells its adapter.
#[derive(Debug)]
pub enum PeerOutput {
    /// Send `contents` from `source` to `destination` (UDP).
    Transmit {
        /// The local address it leaves from.
        source: SocketAddr,
        /// The remote address.
        destination: SocketAddr,
        /// The datagram.
        contents: Vec<u8>,
    },
    /// Something happened on the call.
    Event(PeerEvent),
    /// Nothing more to do before this time, unless a datagram arrives.
    Timeout(Instant),
}

/// A call-level happening on the peer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PeerEvent {
    /// ICE and DTLS are up: media can flow.
    Connected,
    /// The client's data channel is open.
    ChannelOpen,
    /// A control from the data channel (`say`, `dtmf`, `end`).
    Control(ClientEvent),
    /// A data channel message the decoder refused.
    ControlError(DecodeError),
    /// The connection is gone (ICE disconnected, or closed).
    Disconnected,
}

/// The crypto str0m uses (the system OpenSSL), built once.
fn crypto() -> Arc<CryptoProvider> {
    static CRYPTO: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    CRYPTO
        .get_or_init(|| Arc::new(str0m::crypto::from_feature_flags()))
        .clone()
}

/// Caller audio decoded, waiting to be taken as 20 ms frames.
#[derive(Debug)]
struct InboundAudio {
    decoder: OpusDecoder,
    /// RTP time (48 kHz) the next packet should have.
    next_rtp: Option<u64>,
    pending: Vec<i16>,
    frame: Vec<i16>,
    /// Samples dropped because nobody took them.
    overflow: u64,
    /// 20 ms frames filled by FEC or concealment.
    filled: u64,
}

impl InboundAudio {
    fn new() -> Result<Self, OpusError> {
        Ok(Self {
            decoder: OpusDecoder::new(INPUT_RATE_HZ)?,
            next_rtp: None,
            pending: Vec::with_capacity(MAX_PENDING_SAMPLES),
            frame: vec![0; INPUT_FRAME],
            overflow: 0,
            filled: 0,
        })
    }

    /// Decodes one packet at RTP time `rtp` (48 kHz), filling a gap before it.
    fn packet(&mut self, rtp: u64, packet: &[u8]) {
        if let Some(expected) = self.next_rtp
            && rtp > expected
        {
            let missing = ((rtp - expected) / OUTPUT_FRAME as u64).min(MAX_FILLED_FRAMES);
            for i in 0..missing {
                // The frame just before this packet is in its FEC copy.
                let filled = if i + 1 == missing {
                    self.decoder.recover(packet)
                } else {
                    self.decoder.conceal()
                };
                if let Ok(pcm) = filled {
                    self.filled += 1;
                    push_bounded(&mut self.pending, pcm, &mut self.overflow);
                }
            }
        } else if self.next_rtp.is_some_and(|expected| rtp < expected) {
            return; // late or repeated: its time has passed
        }
        // A corrupt packet is skipped; the next gap fill conceals it.
        if let Ok(pcm) = self.decoder.decode(packet) {
            let samples = pcm.len() as u64 * u64::from(OUTPUT_RATE_HZ / INPUT_RATE_HZ);
            push_bounded(&mut self.pending, pcm, &mut self.overflow);
            self.next_rtp = Some(rtp + samples);
        }
    }

    fn pop_frame(&mut self) -> Option<&[i16]> {
        if self.pending.len() < INPUT_FRAME {
            return None;
        }
        self.frame.copy_from_slice(&self.pending[..INPUT_FRAME]);
        self.pending.drain(..INPUT_FRAME);
        Some(&self.frame)
    }
}

/// Appends `pcm`, dropping the oldest samples past the bound.
fn push_bounded(pending: &mut Vec<i16>, pcm: &[i16], overflow: &mut u64) {
    let excess = (pending.len() + pcm.len()).saturating_sub(MAX_PENDING_SAMPLES);
    if excess > 0 {
        let dropped = excess.min(pending.len());
        pending.drain(..dropped);
        *overflow += excess as u64;
    }
    let room = MAX_PENDING_SAMPLES - pending.len();
    pending.extend_from_slice(&pcm[pcm.len().saturating_sub(room)..]);
}

/// A pause in sending longer than this moves the RTP time on by the pause.
const SEND_PAUSE: Duration = Duration::from_millis(60);

/// The RTP time (48 kHz) of each answer frame. Frames sent one after another
/// are one frame apart in RTP time. After a pause in sending (the bot silent
/// between answers, or the voice late), the RTP time moves on by the pause
/// (RFC 3550 5.1: the sampling instant) and the frame starts a talkspurt (the
/// marker bit): the client's jitter buffer sees a gap, not packets arriving
/// seconds later than their timestamps say, which it would take for network
/// jitter and answer by holding more audio (more delay, and more audio still
/// to play after a barge-in).
#[derive(Debug, Default)]
struct RtpClock {
    /// RTP time of the next frame when no pause comes before it.
    next: u64,
    /// When the last frame was sent.
    last_sent: Option<Instant>,
}

impl RtpClock {
    /// The RTP time of a frame of `samples` sent at `now`, and whether it
    /// starts a talkspurt.
    fn stamp(&mut self, samples: u64, now: Instant) -> (u64, bool) {
        let talkspurt = match self.last_sent {
            None => true,
            Some(last) => {
                let pause = now.saturating_duration_since(last);
                if pause > SEND_PAUSE && samples > 0 {
                    // Whole frames the pause stands for, less the one that
                    // would have come next anyway.
                    let paused = pause.as_micros() as u64 * u64::from(OUTPUT_RATE_HZ) / 1_000_000;
                    self.next += (paused / samples).saturating_sub(1) * samples;
                    true
                } else {
                    false
                }
            }
        };
        let at = self.next;
        self.next += samples;
        self.last_sent = Some(now);
        (at, talkspurt)
    }
}

/// One call's WebRTC peer connection; see the module docs.
pub struct WebRtcPeer {
    rtc: Rtc,
    audio: Option<Mid>,
    opus_pt: Option<Pt>,
    channel: Option<ChannelId>,
    controls: ClientMessageDecoder,
    inbound: InboundAudio,
    encoder: OpusEncoder,
    /// RTP time (48 kHz) of the packets sent.
    out_rtp: RtpClock,
    /// Events written before the data channel opened.
    queued: VecDeque<String>,
    /// Events dropped (queue full, channel gone).
    dropped_events: u64,
}

impl std::fmt::Debug for WebRtcPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebRtcPeer")
            .field("audio", &self.audio)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl WebRtcPeer {
    /// Accepts the client's SDP `offer`, offering `candidates` (the UDP
    /// addresses the adapter receives on, as the client can reach them);
    /// returns the peer and its SDP answer. Generates the DTLS certificate
    /// (a few milliseconds: call it off the async workers).
    pub fn accept(
        offer: &str,
        candidates: &[SocketAddr],
        limits: DecoderLimits,
        now: Instant,
    ) -> Result<(Self, String), WebRtcError> {
        let offer =
            SdpOffer::from_sdp_string(offer).map_err(|e| WebRtcError::BadOffer(e.to_string()))?;
        let mut rtc = RtcConfig::new()
            .set_crypto_provider(crypto())
            .set_ice_lite(true)
            .clear_codecs()
            .enable_opus(true, false)
            .build(now);
        for &addr in candidates {
            let candidate =
                Candidate::host(addr, "udp").map_err(|_| WebRtcError::Candidate(addr))?;
            // None: the same address twice, which changes nothing.
            let _ = rtc.add_local_candidate(candidate);
        }
        let answer = rtc.sdp_api().accept_offer(offer)?;
        let peer = Self {
            rtc,
            audio: None,
            opus_pt: None,
            channel: None,
            controls: ClientMessageDecoder::controls_only(limits),
            inbound: InboundAudio::new()?,
            encoder: OpusEncoder::new(OpusEncoderConfig::default())?,
            out_rtp: RtpClock::default(),
            queued: VecDeque::new(),
            dropped_events: 0,
        };
        Ok((peer, answer.to_sdp_string()))
    }

    /// A UDP datagram from `source` arrived on `destination` at `now`.
    /// Datagrams that are not this peer's (a stray STUN request) are ignored.
    pub fn handle_receive(
        &mut self,
        now: Instant,
        source: SocketAddr,
        destination: SocketAddr,
        contents: &[u8],
    ) -> Result<(), WebRtcError> {
        let Ok(contents) = DatagramRecv::try_from(contents) else {
            return Ok(()); // neither STUN, DTLS, RTP nor RTCP
        };
        let input = Input::Receive(
            now,
            Receive {
                proto: Protocol::Udp,
                source,
                destination,
                contents,
            },
        );
        if self.rtc.accepts(&input) {
            self.rtc.handle_input(input)?;
        }
        Ok(())
    }

    /// The time from the last [`PeerOutput::Timeout`] has come.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), WebRtcError> {
        Ok(self.rtc.handle_input(Input::Timeout(now))?)
    }

    /// The next thing to do; call until [`PeerOutput::Timeout`].
    pub fn poll_output(&mut self) -> Result<PeerOutput, WebRtcError> {
        loop {
            match self.rtc.poll_output()? {
                Output::Timeout(at) => return Ok(PeerOutput::Timeout(at)),
                Output::Transmit(t) => {
                    return Ok(PeerOutput::Transmit {
                        source: t.source,
                        destination: t.destination,
                        contents: t.contents.into(),
                    });
                }
                Output::Event(e) => {
                    if let Some(ev) = self.on_event(e) {
                        return Ok(PeerOutput::Event(ev));
                    }
                }
            }
        }
    }

    fn on_event(&mut self, event: Event) -> Option<PeerEvent> {
        match event {
            Event::Connected => Some(PeerEvent::Connected),
            Event::IceConnectionStateChange(IceConnectionState::Disconnected) => {
                Some(PeerEvent::Disconnected)
            }
            Event::MediaAdded(m) if m.kind == MediaKind::Audio && self.audio.is_none() => {
                self.audio = Some(m.mid);
                None
            }
            Event::MediaData(data) => {
                self.on_media(&data);
                None
            }
            Event::ChannelOpen(id, _label) if self.channel.is_none() => {
                self.channel = Some(id);
                self.flush_queued();
                Some(PeerEvent::ChannelOpen)
            }
            Event::ChannelData(data) if Some(data.id) == self.channel => {
                let msg = if data.binary {
                    ClientMessage::Binary(&data.data)
                } else {
                    match std::str::from_utf8(&data.data) {
                        Ok(text) => ClientMessage::Text(text),
                        Err(_) => ClientMessage::Binary(&data.data),
                    }
                };
                Some(match self.controls.decode(msg) {
                    Ok(ev) => PeerEvent::Control(ev),
                    Err(e) => PeerEvent::ControlError(e),
                })
            }
            Event::ChannelClose(id) if Some(id) == self.channel => {
                self.channel = None;
                None
            }
            _ => None,
        }
    }

    fn on_media(&mut self, data: &MediaData) {
        if Some(data.mid) != self.audio || data.params.spec().codec != Codec::Opus {
            return;
        }
        let rtp = data.time.rebase(Frequency::FORTY_EIGHT_KHZ).numer();
        self.inbound.packet(rtp, &data.data);
    }

    /// The next 20 ms of the caller's audio (16 kHz), if a whole frame waits.
    pub fn pop_frame(&mut self) -> Option<&[i16]> {
        self.inbound.pop_frame()
    }

    /// Lost 20 ms frames the peer filled in (FEC or concealment).
    pub fn filled_frames(&self) -> u64 {
        self.inbound.filled
    }

    /// Sends one 20 ms answer frame (48 kHz, [`OUTPUT_FRAME`] samples)
    /// captured at `now`. Before the audio track is negotiated it is dropped
    /// (`Ok(false)`).
    pub fn send_audio(&mut self, frame: &[i16], now: Instant) -> Result<bool, WebRtcError> {
        let Some(mid) = self.audio else {
            return Ok(false);
        };
        let Some(writer) = self.rtc.writer(mid) else {
            return Ok(false);
        };
        let pt = match self.opus_pt {
            Some(pt) => pt,
            None => {
                let Some(pt) = writer
                    .payload_params()
                    .find(|p| p.spec().codec == Codec::Opus)
                    .map(|p| p.pt())
                else {
                    return Ok(false);
                };
                self.opus_pt = Some(pt);
                pt
            }
        };
        let packet = self.encoder.encode(frame)?;
        let (rtp, talkspurt) = self.out_rtp.stamp(frame.len() as u64, now);
        let time = MediaTime::new(rtp, Frequency::FORTY_EIGHT_KHZ);
        writer
            .start_of_talkspurt(talkspurt)
            .write(pt, now, time, packet)?;
        Ok(true)
    }

    /// Sends one JSON event on the data channel (queued, bounded, until the
    /// channel opens).
    pub fn send_event(&mut self, json: &str) {
        if self.channel.is_none() {
            if self.queued.len() == MAX_QUEUED_EVENTS {
                self.queued.pop_front();
                self.dropped_events += 1;
            }
            self.queued.push_back(json.to_owned());
            return;
        }
        self.write_channel(json);
    }

    fn write_channel(&mut self, json: &str) {
        let written = self
            .channel
            .and_then(|id| self.rtc.channel(id))
            .is_some_and(|mut ch| ch.write(false, json.as_bytes()).unwrap_or(false));
        if !written {
            self.dropped_events += 1;
        }
    }

    fn flush_queued(&mut self) {
        while let Some(json) = self.queued.pop_front() {
            self.write_channel(&json);
        }
    }

    /// Events that could not be delivered (queue full before the channel
    /// opened, or the channel's buffer full).
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// Bytes of events written to the data channel that the client has not
    /// acknowledged yet (SCTP's buffered amount falls as the client's SACKs
    /// arrive); 0 without an open channel. A closing server waits for 0 so
    /// that its last event, `end`, is delivered (resent if it was lost).
    pub fn unacked_event_bytes(&mut self) -> usize {
        self.channel
            .and_then(|id| self.rtc.channel(id))
            .map_or(0, |mut ch| ch.buffered_amount())
    }

    /// Closes the peer connection (nothing more is sent or received).
    pub fn close(&mut self) {
        self.rtc.disconnect();
    }

    /// False once the connection is closed or timed out.
    pub fn is_alive(&self) -> bool {
        self.rtc.is_alive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // a test origin
    fn rtp_time_follows_frames_and_jumps_over_a_pause() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let frame = OUTPUT_FRAME as u64;
        let mut clock = RtpClock::default();
        assert_eq!(
            clock.stamp(frame, ms(0)),
            (0, true),
            "the first frame starts a talkspurt"
        );
        // Paced frames, a little early or late: one frame apart.
        assert_eq!(clock.stamp(frame, ms(22)), (frame, false));
        assert_eq!(clock.stamp(frame, ms(35)), (2 * frame, false));
        assert_eq!(
            clock.stamp(frame, ms(95)),
            (3 * frame, false),
            "60 ms is no pause"
        );
        // A second of silence: the RTP time moves on by a second.
        let (rtp, talkspurt) = clock.stamp(frame, ms(1095));
        assert_eq!((rtp - 3 * frame, talkspurt), (48_000, true));
        assert_eq!(clock.stamp(frame, ms(1115)), (rtp + frame, false));
    }

    /// `n` 20 ms packets of a 300 Hz tone, encoded at 48 kHz.
    fn packets(n: usize) -> Vec<Vec<u8>> {
        let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
        (0..n)
            .map(|k| {
                let frame: Vec<i16> = (0..OUTPUT_FRAME)
                    .map(|i| {
                        let t = (k * OUTPUT_FRAME + i) as f64 / 48_000.0;
                        (8000.0 * (2.0 * std::f64::consts::PI * 300.0 * t).sin()) as i16
                    })
                    .collect();
                enc.encode(&frame).unwrap().to_vec()
            })
            .collect()
    }

    fn frames(inbound: &mut InboundAudio) -> usize {
        let mut n = 0;
        while inbound.pop_frame().is_some() {
            n += 1;
        }
        n
    }

    #[test]
    fn each_packet_becomes_one_engine_frame() {
        let mut inbound = InboundAudio::new().unwrap();
        for (i, p) in packets(10).iter().enumerate() {
            inbound.packet(i as u64 * 960, p);
        }
        assert_eq!(frames(&mut inbound), 10);
        assert_eq!(inbound.filled, 0);
    }

    #[test]
    fn a_gap_in_rtp_time_is_filled_and_a_late_packet_dropped() {
        let mut inbound = InboundAudio::new().unwrap();
        let p = packets(10);
        for i in [0usize, 1, 2, 5, 6] {
            inbound.packet(i as u64 * 960, &p[i]);
        }
        // Packets 3 and 4 were lost: 4 from 5's FEC copy, 3 concealed.
        assert_eq!(inbound.filled, 2);
        assert_eq!(frames(&mut inbound), 7);
        // Packet 4 arriving late is not played twice.
        inbound.packet(4 * 960, &p[4]);
        assert_eq!(frames(&mut inbound), 0);
        // RTP time wraps forward: a long gap fills at most 100 ms.
        inbound.packet(100 * 960, &p[7]);
        assert_eq!(inbound.filled, 2 + MAX_FILLED_FRAMES);
        assert_eq!(frames(&mut inbound), 1 + MAX_FILLED_FRAMES as usize);
    }

    #[test]
    fn a_corrupt_packet_is_skipped_not_a_panic() {
        let mut inbound = InboundAudio::new().unwrap();
        inbound.packet(0, &[0xff, 0xff]);
        assert_eq!(frames(&mut inbound), 0);
        inbound.packet(960, &packets(1)[0]);
        assert_eq!(frames(&mut inbound), 1);
    }

    #[test]
    fn audio_nobody_takes_is_bounded() {
        let mut inbound = InboundAudio::new().unwrap();
        for (i, p) in packets(30).iter().enumerate() {
            inbound.packet(i as u64 * 960, p);
        }
        assert_eq!(frames(&mut inbound), MAX_PENDING_SAMPLES / INPUT_FRAME);
        assert_eq!(inbound.overflow, 20 * INPUT_FRAME as u64);
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // a test origin
    fn an_offer_that_is_not_sdp_is_refused() {
        let err = WebRtcPeer::accept("hello", &[], DecoderLimits::default(), Instant::now());
        assert!(matches!(err, Err(WebRtcError::BadOffer(_))), "{err:?}");
    }
}
