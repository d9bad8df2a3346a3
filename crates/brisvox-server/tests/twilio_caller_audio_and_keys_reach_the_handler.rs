//! On /twilio the caller's mu-law 8 kHz audio reaches the handler as 20 ms
//! 16 kHz frames carrying the tone, key presses arrive as DTMF controls, and
//! the custom parameters arrive as metadata.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisvox_engine::{CallEnd, CallSource, Control, Inbound};
use brisvox_server::handler::{CallFuture, CallHandler, CallStart, CallTransport, RouteEdge};
use brisvox_transport::Carrier;

#[derive(Default)]
struct Recorded {
    frames: usize,
    loud_frames: usize,
    digits: Vec<char>,
    start: Option<CallStart>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Recorded>>);

impl CallHandler for Recorder {
    fn run_call(&self, start: CallStart, mut edge: RouteEdge) -> CallFuture {
        let rec = self.0.clone();
        Box::pin(async move {
            assert_eq!(
                edge.context.metadata, start.metadata,
                "the engine sees the metadata"
            );
            rec.lock().unwrap().start = Some(start);
            while let Some(item) = edge.source.recv().await {
                match item {
                    Inbound::Audio { frame: f, .. } => {
                        assert_eq!((f.len(), f.sample_rate_hz()), (320, 16000));
                        let peak = f
                            .samples()
                            .iter()
                            .map(|s| s.unsigned_abs())
                            .max()
                            .unwrap_or(0);
                        let mut r = rec.lock().unwrap();
                        r.frames += 1;
                        r.loud_frames += usize::from(peak > 4000);
                    }
                    Inbound::Control {
                        control: Control::Dtmf { digit },
                        ..
                    } => rec.lock().unwrap().digits.push(digit.as_char()),
                    other => panic!("{other:?}"),
                }
            }
            Ok(CallEnd::Hangup)
        })
    }
}

#[tokio::test]
async fn audio_keys_and_parameters() {
    let rec = Recorder::default();
    let srv = common::server_with("", Arc::new(rec.clone())).await;
    let mut ws = common::connect(srv.local_addr(), "/twilio").await;
    let doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../brisvox-transport/tests/fixtures/twilio_session.json"
    ))
    .unwrap();
    for m in doc["messages"].as_array().unwrap() {
        common::send_text(&mut ws, &m.to_string()).await;
    }
    let (_, code) = common::until_close(&mut ws).await;
    assert_eq!(code, Some(1000));
    common::wait_metric(
        srv.local_addr(),
        "brisvox_calls_total{outcome=\"client_end\"} 1",
    )
    .await;
    {
        let r = rec.0.lock().unwrap();
        // 200 ms of tone in; the 8 -> 16 kHz resampler keeps back under one block.
        assert!((8..=10).contains(&r.frames), "{} frames", r.frames);
        assert!(
            r.loud_frames >= 7,
            "the tone survives decoding and resampling: {}",
            r.loud_frames
        );
        assert_eq!(r.digits, ['7']);
        let start = r.start.as_ref().unwrap();
        assert_eq!(start.call_id, "CA5b9f4a1e2c3d4e5f60718293a4b5c6d7");
        assert_eq!(start.metadata["agent"], "support");
        assert_eq!(start.output_sample_rate_hz, 8000);
        assert!(
            matches!(&start.transport, CallTransport::Carrier { carrier: Carrier::Twilio, stream_id, .. } if stream_id == "MZ18ad3ab5a668481ce02b83e7395059f0")
        );
    }
    srv.drain(Duration::from_millis(100)).await;
}
