//! The whole VAD path of a call, fed 20 ms PCM16 frames: WindowAssembler ->
//! VadService (batched with other calls on a real pool) -> VadDetector, gives the same
//! events as the detector run on Python onnxruntime's probabilities.

mod vad_common;

use std::sync::{Arc, mpsc};
use std::time::Duration;

use brisvox_models::pool::{InferencePool, PoolConfig};
use brisvox_models::vad::detector::{VadDetector, VadEvent, VadParams};
use brisvox_models::vad::service::{VadService, VadServiceConfig};
use brisvox_models::vad::silero::SileroRate;
use brisvox_models::vad::window::WindowAssembler;
use vad_common::{goldens, model_or_skip};

#[test]
fn frames_through_the_service_give_the_golden_events() {
    let Some(model) = model_or_skip() else { return };
    let params = VadParams {
        fall_delay: Some(Duration::from_millis(64)),
        ..VadParams::default()
    };
    let calls: Vec<_> = goldens()
        .into_iter()
        .filter(|g| g.rate == SileroRate::Hz16000)
        .collect();
    let service = VadService::new(
        Arc::clone(&model),
        InferencePool::new(PoolConfig {
            threads: 2,
            ..PoolConfig::named("vad-pipeline")
        }),
        VadServiceConfig::new(SileroRate::Hz16000),
    );
    let (tx, rx) = mpsc::channel::<(usize, u64, f32)>();
    let mut streams: Vec<_> = (0..calls.len())
        .map(|c| {
            let tx = tx.clone();
            service.open_stream(move |o| {
                tx.send((c, o.seq, o.probability.expect("scored"))).unwrap();
            })
        })
        .collect();
    let mut assemblers: Vec<_> = calls
        .iter()
        .map(|_| WindowAssembler::new(SileroRate::Hz16000))
        .collect();
    let mut detectors: Vec<_> = calls
        .iter()
        .map(|_| VadDetector::new(params, SileroRate::Hz16000))
        .collect();
    let mut events: Vec<Vec<VadEvent>> = calls.iter().map(|_| Vec::new()).collect();

    // All calls send their k-th 20 ms frame together, as concurrent calls would.
    let pcm: Vec<Vec<i16>> = calls
        .iter()
        .map(|g| g.audio.iter().map(|&x| (x * 32768.0) as i16).collect())
        .collect();
    let frames = pcm.iter().map(|p| p.len().div_ceil(320)).max().unwrap();
    let mut expected_windows = 0;
    for k in 0..frames {
        for (c, p) in pcm.iter().enumerate() {
            let Some(frame) = p.get(k * 320..((k + 1) * 320).min(p.len())) else {
                continue;
            };
            assemblers[c].push(frame, |seq, w| {
                assert_eq!(streams[c].submit(w).unwrap(), seq);
                expected_windows += 1;
            });
        }
        while let Ok((c, seq, p)) = rx.try_recv() {
            events[c].extend(detectors[c].handle_seq(seq, p));
        }
    }
    let mut received: usize = detectors.iter().map(|d| d.stats().windows as usize).sum();
    while received < expected_windows {
        let (c, seq, p) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        events[c].extend(detectors[c].handle_seq(seq, p));
        received += 1;
    }

    let mut stops = 0;
    for (c, g) in calls.iter().enumerate() {
        let mut reference = VadDetector::new(params, SileroRate::Hz16000);
        let golden_events: Vec<VadEvent> = g
            .probabilities
            .iter()
            .enumerate()
            .filter_map(|(i, &p)| reference.handle_seq(i as u64, p))
            .collect();
        assert_eq!(events[c], golden_events, "{}", g.fixture);
        stops += golden_events
            .iter()
            .filter(|e| matches!(e, VadEvent::SpeechEnd { .. }))
            .count();
    }
    assert!(stops >= 6, "the fixtures have stops to compare ({stops})");
    assert!(service.stats().max_batch_rows > 1, "calls shared runs");
}
