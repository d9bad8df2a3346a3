//! The real `brisvox serve` binary (mock providers, the real Silero VAD and
//! Smart Turn models) answers a WebRTC caller: a str0m peer written here
//! posts its SDP offer to `/webrtc/offer`, connects over loopback UDP
//! (ICE, DTLS-SRTP, SCTP), plays a recorded utterance as Opus in real time
//! and receives the bot's speech on the audio track and the `/call`
//! protocol's events on the data channel; `end` on the data channel ends it.
//!
//! Needs the model files: skipped with a message when they are missing, failed
//! when `CI` is set.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig};
use common::binary::{fixture, models_present};
use str0m::change::{SdpAnswer, SdpPendingOffer};
use str0m::channel::ChannelId;
use str0m::format::Codec;
use str0m::media::{Direction, Frequency, MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, Input, Output, Rtc, RtcConfig};
use tokio::net::UdpSocket;

/// The whole exchange must be over well within this.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// A WebRTC caller: one str0m peer on a loopback UDP socket.
struct Caller {
    rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    mid: Mid,
    channel: ChannelId,
    connected: bool,
    channel_open: bool,
    encoder: OpusEncoder,
    decoder: OpusDecoder,
    rtp: u64,
    audible_frames: usize,
    events: Vec<serde_json::Value>,
}

impl Caller {
    async fn offer() -> (Self, SdpPendingOffer, String) {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("udp");
        let local = socket.local_addr().expect("addr");
        let mut rtc = RtcConfig::new()
            .set_crypto_provider(Arc::new(str0m::crypto::from_feature_flags()))
            .clear_codecs()
            .enable_opus(true, false)
            .build(Instant::now());
        rtc.add_local_candidate(Candidate::host(local, "udp").expect("candidate"));
        let mut api = rtc.sdp_api();
        let mid = api.add_media(MediaKind::Audio, Direction::SendRecv, None, None, None);
        let channel = api.add_channel("brisvox".to_owned());
        let (offer, pending) = api.apply().expect("an offer");
        let caller = Caller {
            rtc,
            socket,
            local,
            mid,
            channel,
            connected: false,
            channel_open: false,
            // The fixture is 16 kHz: Opus encodes it as it is (RTP time is 48 kHz).
            encoder: OpusEncoder::new(OpusEncoderConfig {
                sample_rate: 16_000,
                ..OpusEncoderConfig::default()
            })
            .expect("encoder"),
            decoder: OpusDecoder::new(16_000).expect("decoder"),
            rtp: 0,
            audible_frames: 0,
            events: Vec::new(),
        };
        (caller, pending, offer.to_sdp_string())
    }

    /// Sends what str0m has to send and handles its events; returns its
    /// next timeout.
    async fn drive(&mut self) -> Instant {
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
                let loud = pcm.iter().any(|s| s.unsigned_abs() > 1000);
                self.audible_frames += usize::from(loud);
            }
            _ => {}
        }
    }

    /// Waits for a datagram or `until` and hands it to str0m.
    async fn step(&mut self, until: Instant) {
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

    fn send_frame(&mut self, pcm: &[i16]) {
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

    fn send_text(&mut self, text: &str) {
        let mut ch = self.rtc.channel(self.channel).expect("channel");
        assert!(ch.write(false, text.as_bytes()).expect("write"));
    }

    fn saw(&self, kind: &str) -> bool {
        self.events.iter().any(|e| e["type"] == kind)
    }

    fn final_transcript(&self) -> Option<&str> {
        self.events
            .iter()
            .find(|e| e["type"] == "transcript" && e["final"] == true)
            .and_then(|e| e["text"].as_str())
    }

    fn answered(&self) -> bool {
        self.final_transcript().is_some()
            && self.saw("bot_speaking_started")
            && self.saw("turn_metrics")
            && self.audible_frames >= 5
    }
}

/// Posts the offer; returns the answer's SDP.
async fn signal(addr: SocketAddr, offer: &str) -> String {
    let body = serde_json::json!({"type": "offer", "sdp": offer, "call_id": "webrtc-e2e-1"});
    let (status, body) = common::post(
        addr,
        "/webrtc/offer",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON answer");
    assert_eq!(answer["type"], "answer");
    assert_eq!(answer["call_id"], "webrtc-e2e-1");
    answer["sdp"].as_str().expect("sdp").to_owned()
}

#[tokio::test]
async fn a_webrtc_caller_gets_a_spoken_answer_and_events() {
    if !models_present(false) {
        return;
    }
    let (server, _agent) = common::binary::start_mock_server();
    let (mut caller, pending, offer) = Caller::offer().await;
    let answer = signal(server.addr, &offer).await;
    let answer = SdpAnswer::from_sdp_string(&answer).expect("answer SDP");
    caller
        .rtc
        .sdp_api()
        .accept_answer(pending, answer)
        .expect("answer accepted");

    let deadline = Instant::now() + CALL_LIMIT;
    let mut frames = fixture("librivox_0880").into_iter().collect::<Vec<_>>();
    frames.truncate(frames.len() / 320 * 320);
    let mut frames = frames
        .chunks(320)
        .map(<[i16]>::to_vec)
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_frame = Instant::now();
    while !caller.answered() {
        assert!(
            Instant::now() < deadline,
            "no complete answer in time: connected {}, channel {}, audible {}, events {:?}",
            caller.connected,
            caller.channel_open,
            caller.audible_frames,
            caller.events
        );
        let timeout = caller.drive().await;
        let mut until = timeout;
        if caller.connected && caller.channel_open {
            if Instant::now() >= next_frame {
                let frame = frames.next().unwrap_or_else(|| vec![0; 320]);
                caller.send_frame(&frame);
                // An absolute 20 ms grid: the caller speaks in real time.
                next_frame += Duration::from_millis(20);
                continue;
            }
            until = until.min(next_frame);
        } else {
            next_frame = Instant::now();
        }
        caller.step(until).await;
    }
    assert_eq!(caller.final_transcript(), Some("mock transcript 1"));
    let metrics = caller
        .events
        .iter()
        .find(|e| e["type"] == "turn_metrics")
        .expect("metrics");
    let latency = metrics["response_latency_ms"]
        .as_f64()
        .expect("answered turn");
    assert!(latency > 0.0 && latency < 5_000.0, "{metrics}");

    caller.send_text(r#"{"type":"end"}"#);
    while !caller.saw("end") {
        assert!(
            Instant::now() < deadline,
            "no end event: {:?}",
            caller.events
        );
        let timeout = caller.drive().await;
        caller.step(timeout).await;
    }
    let end = caller
        .events
        .iter()
        .find(|e| e["type"] == "end")
        .expect("end");
    assert_eq!(end["reason"], "client_end");
    common::wait_metric(server.addr, "brisvox_calls_total{outcome=\"client_end\"} 1").await;
}
