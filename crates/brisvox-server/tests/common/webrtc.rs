//! A WebRTC caller for the end-to-end tests: one str0m peer on a loopback
//! UDP socket, with one send-and-receive Opus audio track and one data
//! channel, as docs/WEBRTC.md asks of a client. It posts its offer to
//! `/webrtc/offer`, speaks 20 ms frames in real time, decodes the bot's
//! audio and collects the events of the data channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig};
use str0m::change::{SdpAnswer, SdpPendingOffer};
use str0m::channel::ChannelId;
use str0m::format::Codec;
use str0m::media::{Direction, Frequency, MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, Input, Output, Rtc, RtcConfig};
use tokio::net::UdpSocket;

/// A decoded bot frame with a sample above this is audible.
const AUDIBLE: u16 = 1000;

/// A str0m peer that has made its offer and waits for the answer.
pub struct Offering {
    pub rtc: Rtc,
    pub mid: Mid,
    pub channel: ChannelId,
    pub pending: SdpPendingOffer,
    /// The offer's SDP, to post to `/webrtc/offer`.
    pub sdp: String,
}

/// Makes the offer of a peer whose host candidate is `local`.
pub fn offer_from(local: SocketAddr) -> Offering {
    let mut rtc = RtcConfig::new()
        .set_crypto_provider(Arc::new(str0m::crypto::from_feature_flags()))
        .clear_codecs()
        .enable_opus(true, false)
        .build(Instant::now());
    rtc.add_local_candidate(Candidate::host(local, "udp").expect("a host candidate"));
    let mut api = rtc.sdp_api();
    let mid = api.add_media(MediaKind::Audio, Direction::SendRecv, None, None, None);
    let channel = api.add_channel("brisvox".to_owned());
    let (offer, pending) = api.apply().expect("an offer");
    Offering {
        rtc,
        mid,
        channel,
        pending,
        sdp: offer.to_sdp_string(),
    }
}

/// Posts `offer` to the server at `addr` as call `call_id`; returns the
/// answer (HTTP 200 asserted).
pub async fn signal(addr: SocketAddr, offer: &str, call_id: &str) -> serde_json::Value {
    let body = serde_json::json!({"type": "offer", "sdp": offer, "call_id": call_id});
    let (status, body) = super::post(
        addr,
        "/webrtc/offer",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON answer");
    assert_eq!(answer["type"], "answer");
    assert_eq!(answer["call_id"], call_id);
    answer
}

/// A WebRTC caller: one str0m peer on a loopback UDP socket.
pub struct Caller {
    pub rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    mid: Mid,
    channel: ChannelId,
    pending: Option<SdpPendingOffer>,
    /// The offer's SDP.
    pub offer: String,
    pub connected: bool,
    pub channel_open: bool,
    encoder: OpusEncoder,
    decoder: OpusDecoder,
    rtp: u64,
    /// Bot frames decoded with an audible sample.
    pub audible_frames: usize,
    /// The data channel's events, in order.
    pub events: Vec<serde_json::Value>,
}

impl Caller {
    /// A caller on a fresh loopback socket, its offer made.
    pub async fn offer() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("udp");
        let local = socket.local_addr().expect("addr");
        let offering = offer_from(local);
        Caller {
            rtc: offering.rtc,
            socket,
            local,
            mid: offering.mid,
            channel: offering.channel,
            pending: Some(offering.pending),
            offer: offering.sdp,
            connected: false,
            channel_open: false,
            // The fixtures are 16 kHz: Opus encodes them as they are (RTP time is 48 kHz).
            encoder: OpusEncoder::new(OpusEncoderConfig {
                sample_rate: 16_000,
                ..OpusEncoderConfig::default()
            })
            .expect("encoder"),
            decoder: OpusDecoder::new(16_000).expect("decoder"),
            rtp: 0,
            audible_frames: 0,
            events: Vec::new(),
        }
    }

    /// Takes the server's answer SDP.
    pub fn accept(&mut self, answer: &str) {
        let answer = SdpAnswer::from_sdp_string(answer).expect("answer SDP");
        let pending = self.pending.take().expect("an offer waiting");
        self.rtc
            .sdp_api()
            .accept_answer(pending, answer)
            .expect("answer accepted");
    }

    /// Sends what str0m has to send and handles its events; returns its
    /// next timeout.
    pub async fn drive(&mut self) -> Instant {
        loop {
            match self.rtc.poll_output().expect("poll") {
                Output::Timeout(at) => return at,
                Output::Transmit(t) => {
                    self.socket
                        .send_to(&t.contents, t.destination)
                        .await
                        .expect("send");
                }
                Output::Event(e) => self.on_event(e),
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Connected => self.connected = true,
            Event::ChannelOpen(id, _) if id == self.channel => self.channel_open = true,
            Event::ChannelData(d) if d.id == self.channel => {
                let ev: serde_json::Value = serde_json::from_slice(&d.data).expect("JSON event");
                self.events.push(ev);
            }
            Event::MediaData(d) if d.mid == self.mid => {
                let pcm = self.decoder.decode(&d.data).expect("Opus from the server");
                let loud = pcm.iter().any(|s| s.unsigned_abs() > AUDIBLE);
                self.audible_frames += usize::from(loud);
            }
            _ => {}
        }
    }

    /// Waits for a datagram or `until` and hands it to str0m.
    pub async fn step(&mut self, until: Instant) {
        let mut buf = vec![0u8; 2048];
        let deadline = tokio::time::Instant::from_std(until);
        tokio::select! {
            r = self.socket.recv_from(&mut buf) => {
                let (n, source) = r.expect("recv");
                let input = Input::Receive(Instant::now(), Receive {
                    proto: Protocol::Udp,
                    source,
                    destination: self.local,
                    contents: buf[..n].try_into().expect("a WebRTC datagram"),
                });
                self.rtc.handle_input(input).expect("input");
            }
            () = tokio::time::sleep_until(deadline) => {
                self.rtc.handle_input(Input::Timeout(Instant::now())).expect("timeout");
            }
        }
    }

    /// Sends one 20 ms frame (16 kHz) as an Opus packet.
    pub fn send_frame(&mut self, pcm: &[i16]) {
        let packet = self.encoder.encode(pcm).expect("encode").to_vec();
        let writer = self.rtc.writer(self.mid).expect("audio writer");
        let pt = writer
            .payload_params()
            .find(|p| p.spec().codec == Codec::Opus)
            .expect("Opus negotiated")
            .pt();
        let time = MediaTime::new(self.rtp, Frequency::FORTY_EIGHT_KHZ);
        writer
            .write(pt, Instant::now(), time, packet)
            .expect("write");
        self.rtp += 960;
    }

    /// Sends a text message on the data channel.
    pub fn send_text(&mut self, text: &str) {
        let mut ch = self.rtc.channel(self.channel).expect("channel");
        assert!(ch.write(false, text.as_bytes()).expect("write"));
    }

    pub fn saw(&self, kind: &str) -> bool {
        self.events.iter().any(|e| e["type"] == kind)
    }

    pub fn event(&self, kind: &str) -> Option<&serde_json::Value> {
        self.events.iter().find(|e| e["type"] == kind)
    }

    pub fn final_transcript(&self) -> Option<&str> {
        self.events
            .iter()
            .find(|e| e["type"] == "transcript" && e["final"] == true)
            .and_then(|e| e["text"].as_str())
    }

    /// A final transcript, the bot's speech (audible) and the turn's metrics.
    pub fn answered(&self) -> bool {
        self.final_transcript().is_some()
            && self.saw("bot_speaking_started")
            && self.saw("turn_metrics")
            && self.audible_frames >= 5
    }

    /// Speaks `speech` (16 kHz) in real time, then silence, until the call
    /// is [`Caller::answered`]; panics at `deadline`.
    pub async fn talk_until_answered(&mut self, speech: &[i16], deadline: Instant) {
        let mut frames = speech.chunks_exact(320);
        let silence = [0i16; 320];
        let mut next_frame = Instant::now();
        while !self.answered() {
            assert!(
                Instant::now() < deadline,
                "no complete answer in time: connected {}, channel {}, audible {}, events {:?}",
                self.connected,
                self.channel_open,
                self.audible_frames,
                self.events
            );
            let mut until = self.drive().await;
            if self.connected && self.channel_open {
                if Instant::now() >= next_frame {
                    let frame = frames.next().unwrap_or(&silence);
                    self.send_frame(frame);
                    // An absolute 20 ms grid: the caller speaks in real time.
                    next_frame += Duration::from_millis(20);
                    continue;
                }
                until = until.min(next_frame);
            } else {
                next_frame = Instant::now();
            }
            self.step(until).await;
        }
    }

    /// Sends `end` on the data channel and waits for the server's `end`;
    /// returns its reason.
    pub async fn end(&mut self, deadline: Instant) -> String {
        self.send_text(r#"{"type":"end"}"#);
        while !self.saw("end") {
            assert!(Instant::now() < deadline, "no end event: {:?}", self.events);
            let timeout = self.drive().await;
            self.step(timeout).await;
        }
        let end = self.event("end").expect("end");
        end["reason"].as_str().unwrap_or_default().to_owned()
    }
}
