//! The sans-IO WebRTC peer against a str0m client, with no socket and no
//! clock: datagrams are handed from one to the other in memory and time
//! jumps to the next timeout either asks for. ICE-lite, DTLS-SRTP and the
//! data channel come up; Opus audio and the `/call` controls and events
//! cross both ways.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_audio::opus::{OpusDecoder, OpusEncoder, OpusEncoderConfig};
use brisvox_transport::webrtc::{OUTPUT_FRAME, PeerEvent, PeerOutput, WebRtcPeer};
use brisvox_transport::{ClientEvent, DecoderLimits};
use str0m::change::SdpAnswer;
use str0m::channel::ChannelId;
use str0m::format::Codec;
use str0m::media::{Direction, Frequency, MediaKind, MediaTime, Mid};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, Input, Output, Rtc, RtcConfig};

const CLIENT: &str = "127.0.0.1:40000";
const SERVER: &str = "127.0.0.1:50000";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Both ends and the virtual clock.
struct Link {
    now: Instant,
    client: Rtc,
    mid: Mid,
    channel: ChannelId,
    server: WebRtcPeer,
    /// What each side saw.
    server_events: Vec<PeerEvent>,
    server_frames: usize,
    client_open: bool,
    client_texts: Vec<String>,
    client_audio: Vec<Vec<u8>>,
    /// The server sent the client something since the client's last poll.
    delivered: bool,
}

impl Link {
    #[allow(clippy::disallowed_methods)] // the virtual clock's origin
    fn new() -> Self {
        let now = Instant::now();
        let mut client = RtcConfig::new()
            .set_crypto_provider(Arc::new(str0m::crypto::from_feature_flags()))
            .clear_codecs()
            .enable_opus(true, false)
            .build(now);
        client.add_local_candidate(Candidate::host(addr(CLIENT), "udp").unwrap());
        let mut api = client.sdp_api();
        let mid = api.add_media(MediaKind::Audio, Direction::SendRecv, None, None, None);
        let channel = api.add_channel("brisvox".to_owned());
        let (offer, pending) = api.apply().unwrap();
        let (server, answer) = WebRtcPeer::accept(
            &offer.to_sdp_string(),
            &[addr(SERVER)],
            DecoderLimits::default(),
            now,
        )
        .unwrap();
        let answer = SdpAnswer::from_sdp_string(&answer).unwrap();
        client.sdp_api().accept_answer(pending, answer).unwrap();
        Link {
            now,
            client,
            mid,
            channel,
            server,
            server_events: Vec::new(),
            server_frames: 0,
            client_open: false,
            client_texts: Vec::new(),
            client_audio: Vec::new(),
            delivered: false,
        }
    }

    /// Runs both sides until neither has anything to do before `until`.
    fn run_until(&mut self, until: Instant) {
        loop {
            let mut client_next = self.poll_client();
            let server_next = self.poll_server();
            if self.delivered {
                // The server's datagrams are the client's input: poll it again.
                self.delivered = false;
                client_next = self.poll_client();
            }
            let next = client_next.min(server_next);
            if next > until {
                self.now = until;
                return;
            }
            self.now = self.now.max(next);
            self.client.handle_input(Input::Timeout(self.now)).unwrap();
            self.server.handle_timeout(self.now).unwrap();
        }
    }

    fn poll_client(&mut self) -> Instant {
        loop {
            match self.client.poll_output().unwrap() {
                Output::Timeout(at) => return at,
                Output::Transmit(t) => {
                    self.server
                        .handle_receive(self.now, t.source, t.destination, &t.contents)
                        .unwrap();
                }
                Output::Event(Event::ChannelOpen(id, _)) if id == self.channel => {
                    self.client_open = true;
                }
                Output::Event(Event::ChannelData(d)) => {
                    self.client_texts.push(String::from_utf8(d.data).unwrap());
                }
                Output::Event(Event::MediaData(d)) if d.mid == self.mid => {
                    self.client_audio.push(d.data.to_vec());
                }
                Output::Event(_) => {}
            }
        }
    }

    fn poll_server(&mut self) -> Instant {
        loop {
            match self.server.poll_output().unwrap() {
                PeerOutput::Timeout(at) => {
                    while self.server.pop_frame().is_some() {
                        self.server_frames += 1;
                    }
                    return at;
                }
                PeerOutput::Transmit {
                    source,
                    destination,
                    contents,
                } => {
                    let input = Input::Receive(
                        self.now,
                        Receive {
                            proto: Protocol::Udp,
                            source,
                            destination,
                            contents: contents.as_slice().try_into().unwrap(),
                        },
                    );
                    self.client.handle_input(input).unwrap();
                    self.delivered = true;
                }
                PeerOutput::Event(ev) => self.server_events.push(ev),
            }
        }
    }

    fn connect(&mut self) {
        let deadline = self.now + Duration::from_secs(10);
        while !(self.client_open && self.server_events.contains(&PeerEvent::ChannelOpen)) {
            assert!(
                self.now < deadline,
                "not connected: {:?}",
                self.server_events
            );
            let step = self.now + Duration::from_millis(10);
            self.run_until(step);
        }
        assert!(self.server_events.contains(&PeerEvent::Connected));
    }

    fn client_sends_audio(&mut self, packet: &[u8], rtp: u64) {
        let writer = self.client.writer(self.mid).unwrap();
        let pt = writer
            .payload_params()
            .find(|p| p.spec().codec == Codec::Opus)
            .unwrap()
            .pt();
        let time = MediaTime::new(rtp, Frequency::FORTY_EIGHT_KHZ);
        writer.write(pt, self.now, time, packet.to_vec()).unwrap();
    }
}

fn tone(frame: usize, rate: usize) -> Vec<i16> {
    let len = rate / 50;
    (0..len)
        .map(|i| {
            let t = (frame * len + i) as f64 / rate as f64;
            (8000.0 * (2.0 * std::f64::consts::PI * 300.0 * t).sin()) as i16
        })
        .collect()
}

#[test]
fn audio_controls_and_events_cross_both_ways() {
    let mut link = Link::new();
    link.connect();

    // Caller audio: 20 packets, 20 ms apart, become 20 engine frames.
    let mut enc = OpusEncoder::new(OpusEncoderConfig::default()).unwrap();
    for i in 0..20 {
        let packet = enc.encode(&tone(i, 48_000)).unwrap().to_vec();
        link.client_sends_audio(&packet, i as u64 * 960);
        let step = link.now + Duration::from_millis(20);
        link.run_until(step);
    }
    let step = link.now + Duration::from_millis(200);
    link.run_until(step);
    assert_eq!(link.server_frames, 20);

    // Controls from the data channel, decoded as `/call` decodes them.
    let text = r#"{"type":"say","text":"hello","interrupt":true}"#;
    let mut ch = link.client.channel(link.channel).unwrap();
    assert!(ch.write(false, text.as_bytes()).unwrap());
    let mut ch = link.client.channel(link.channel).unwrap();
    assert!(ch.write(true, &[1, 2, 3]).unwrap());
    let step = link.now + Duration::from_millis(100);
    link.run_until(step);
    let say = ClientEvent::Say {
        text: "hello".into(),
        interrupt: true,
    };
    assert!(
        link.server_events.contains(&PeerEvent::Control(say)),
        "{:?}",
        link.server_events
    );
    assert!(
        link.server_events.iter().any(
            |e| matches!(e, PeerEvent::ControlError(err) if err.code() == "audio_not_accepted")
        ),
        "{:?}",
        link.server_events
    );

    // Answer audio and an event back to the caller.
    for i in 0..10 {
        assert!(link.server.send_audio(&tone(i, 48_000), link.now).unwrap());
        assert_eq!(tone(i, 48_000).len(), OUTPUT_FRAME);
        let step = link.now + Duration::from_millis(20);
        link.run_until(step);
    }
    link.server.send_event(r#"{"type":"clear"}"#);
    let step = link.now + Duration::from_millis(200);
    link.run_until(step);
    assert_eq!(link.client_texts, [r#"{"type":"clear"}"#]);
    assert_eq!(link.client_audio.len(), 10);
    let mut dec = OpusDecoder::new(48_000).unwrap();
    let decoded: usize = link
        .client_audio
        .iter()
        .map(|p| dec.decode(p).unwrap().len())
        .sum();
    assert_eq!(decoded, 10 * OUTPUT_FRAME);
}
