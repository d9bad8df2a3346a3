//! The stop rule on real speech: the golden Silero probabilities of the fixtures,
//! driven through VadDetector, stop once per utterance, close after the ground-truth
//! end of speech in the fixture's sidecar.

use std::path::Path;
use std::time::Duration;

use brisvox_models::vad::detector::{VadDetector, VadEvent, VadParams};
use brisvox_models::vad::silero::SileroRate;

struct Case {
    fixture: String,
    rate: SileroRate,
    probabilities: Vec<f32>,
    /// (start_ms, end_ms) of each utterance, from the sidecar.
    utterances: Vec<(f64, f64)>,
    duration_ms: f64,
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("tests/golden/silero");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            let source = doc["source"].as_str().unwrap();
            let sidecar = root.join("../..").join(source.replace(".wav", ".json"));
            let side: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
            Case {
                fixture: doc["fixture"].as_str().unwrap().to_owned(),
                rate: SileroRate::from_hz(doc["sample_rate_hz"].as_u64().unwrap() as u32).unwrap(),
                probabilities: doc["probabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect(),
                utterances: side["utterances"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| {
                        (
                            u["start_ms"].as_f64().unwrap(),
                            u["end_ms"].as_f64().unwrap(),
                        )
                    })
                    .collect(),
                duration_ms: side["duration_ms"].as_f64().unwrap(),
            }
        })
        .collect()
}

fn events(case: &Case, params: VadParams) -> Vec<VadEvent> {
    let mut d = VadDetector::new(params, case.rate);
    let n = case.rate.window_samples() as u64;
    case.probabilities
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| d.handle_window((i as u64 + 1) * n, p))
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[test]
fn each_utterance_ends_with_a_stop_near_its_true_end() {
    let params = VadParams::default();
    let mut checked = 0;
    for case in cases() {
        let evs = events(&case, params);
        let stops: Vec<(f64, f64)> = evs
            .iter()
            .filter_map(|e| match e {
                VadEvent::SpeechEnd {
                    speech_end_at,
                    decided_at,
                } => Some((ms(*speech_end_at), ms(*decided_at))),
                _ => None,
            })
            .collect();
        eprintln!(
            "{}: truth {:?}, stops {:?}",
            case.fixture, case.utterances, stops
        );
        // The last stop of each utterance lies after its true end (within the
        // hangover plus a few windows of Silero's own lag) and before the next one.
        for (k, &(_, end)) in case.utterances.iter().enumerate() {
            if end + 300.0 > case.duration_ms {
                // Too little audio after the end for a 128 ms hangover plus
                // Silero's lag (the short telephone prompts): no stop expected.
                continue;
            }
            checked += 1;
            let next_start = case.utterances.get(k + 1).map_or(f64::MAX, |u| u.0);
            let last = stops
                .iter()
                .rfind(|(_, decided)| *decided < next_start)
                .unwrap_or_else(|| panic!("{}: no stop for utterance {k}", case.fixture));
            assert!(
                (last.0 - end).abs() <= 200.0,
                "{} utterance {k}: speech end {:.0} ms vs truth {end:.0} ms",
                case.fixture,
                last.0
            );
            assert!(last.1 - last.0 >= 100.0 - 30.0, "decided after min_silence");
        }
    }
    assert!(checked >= 5, "{checked} utterance ends checked");
}

#[test]
fn early_hints_carry_the_time_of_the_stop_that_follows() {
    let params = VadParams {
        fall_delay: Some(Duration::from_millis(64)),
        ..VadParams::default()
    };
    let mut hinted_stops = 0;
    for case in cases() {
        let evs = events(&case, params);
        let mut pending = None;
        for e in evs {
            match e {
                VadEvent::Falling { at, decided_at } => {
                    assert!(decided_at >= at - params.speech_pad);
                    pending = Some(at);
                }
                VadEvent::SpeechEnd { speech_end_at, .. } => {
                    assert_eq!(pending.take(), Some(speech_end_at), "{}", case.fixture);
                    hinted_stops += 1;
                }
                VadEvent::SpeechStart { .. } => pending = None,
            }
        }
    }
    assert!(hinted_stops >= 6, "{hinted_stops}");
}
