//! The real Whisper tiny.en model (ONNX graphs from `scripts/fetch-models.sh
//! --whisper`) transcribes the speech fixtures through [`LocalStt`] within a
//! loose word error rate: LibriVox sentences at 16 kHz, telephone prompts at
//! 8 kHz (resampled by the adapter), and a recording with two utterances
//! finalized one after the other.
//!
//! Two ways: the audio as fast as the session takes it with partials off (the
//! recogniser alone at each finalize), and, with `BRISVOX_STT_PACED=1`
//! (scripts/test-local-stt.sh), in real time with partials on, as a call
//! sends it (about a minute). Prints each utterance's text, word error rate
//! and the time from the finalize to the final. Fails without the model when
//! `CI` is set, else skips.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_core::AudioFrame;
use brisvox_models::whisper::{WHISPER_DIR, missing_files};
use brisvox_providers::local::{LocalStt, LocalSttOptions};
use brisvox_providers::{SendError, SttConfig, SttEvent, SttProvider};
use brisvox_server::local_stt::WhisperRecognizer;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model_dir() -> Option<PathBuf> {
    let dir = brisvox_models::runtime::model_dir_candidates()
        .into_iter()
        .map(|d| d.join(WHISPER_DIR))
        .find(|d| missing_files(d).is_none());
    if dir.is_none() {
        assert!(
            !brisvox_models::runtime::models_required(),
            "the Whisper model is missing: run scripts/fetch-models.sh --whisper"
        );
        eprintln!("skipped: no Whisper model (scripts/fetch-models.sh --whisper)");
    }
    dir
}

/// Lower case words of letters, digits and apostrophes.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Word error rate: word-level edit distance over the reference's length.
fn wer(reference: &str, hypothesis: &str) -> f64 {
    let (r, h) = (words(reference), words(hypothesis));
    let mut row: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, hw) in h.iter().enumerate() {
            let cost = if rw == hw { prev } else { prev + 1 };
            prev = row[j + 1];
            row[j + 1] = cost.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[h.len()] as f64 / r.len().max(1) as f64
}

#[test]
fn wer_counts_substitutions_insertions_and_deletions() {
    assert_eq!(wer("a b c d", "a b c d"), 0.0);
    assert_eq!(wer("a b c d", "a x c d"), 0.25);
    assert_eq!(wer("a b c d", "a b c"), 0.25);
    assert_eq!(wer("a b c d", "a b c d e"), 0.25);
    assert_eq!(wer("I'm sorry.", "i'm SORRY"), 0.0);
}

struct Fixture {
    samples: Vec<i16>,
    rate_hz: u32,
    /// (transcript, end of speech in ms)
    utterances: Vec<(String, f64)>,
}

fn fixture(name: &str) -> Fixture {
    let dir = root().join("fixtures");
    let wav = std::fs::read(dir.join(format!("{name}.wav"))).unwrap();
    let audio = brisvox_audio::wav::read_wav(&wav).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.json"))).unwrap()).unwrap();
    let utterances = json["utterances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["transcript"].as_str().unwrap().to_owned(),
                u["end_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    Fixture {
        samples: audio.to_mono(),
        rate_hz: audio.spec.sample_rate_hz,
        utterances,
    }
}

/// Plays the fixture in 20 ms frames (in real time when `paced`),
/// finalizing 300 ms after each utterance's end (where a VAD stop would be),
/// and returns each final's text with the wall time from the finalize to the
/// final, in ms. Interims are skipped.
async fn transcribe(stt: &LocalStt, f: &Fixture, paced: bool) -> Vec<(String, u128)> {
    let mut config = SttConfig::default();
    config.sample_rate_hz = f.rate_hz;
    config.language = Some("en".into());
    let (sender, mut events) = stt.connect(config).await.unwrap().split();
    let frame_len = (f.rate_hz / 50) as usize;
    let stops: Vec<usize> = f
        .utterances
        .iter()
        .map(|(_, end_ms)| ((end_ms + 300.0) / 1000.0 * f64::from(f.rate_hz)) as usize)
        .collect();
    let mut out = Vec::new();
    let mut next_stop = 0;
    #[allow(clippy::disallowed_methods)] // the test's own pacing clock
    let start = Instant::now();
    for (i, chunk) in f.samples.chunks(frame_len).enumerate() {
        if paced {
            tokio::time::sleep_until((start + Duration::from_millis(20 * i as u64)).into()).await;
        }
        let frame = AudioFrame::from_samples(chunk, f.rate_hz).unwrap();
        while let Err(SendError::Full) = sender.send_audio(&frame) {
            tokio::task::yield_now().await;
        }
        let sent = (i + 1) * frame_len;
        if next_stop < stops.len() && (sent >= stops[next_stop] || sent >= f.samples.len()) {
            next_stop += 1;
            sender.finalize().await.unwrap();
            #[allow(clippy::disallowed_methods)]
            let started = Instant::now();
            loop {
                match events.recv().await.unwrap() {
                    SttEvent::Final { text, .. } => {
                        out.push((text, started.elapsed().as_millis()));
                        break;
                    }
                    SttEvent::Interim { .. } => {}
                    other => panic!("expected a final, got {other:?}"),
                }
            }
        }
    }
    out
}

const NAMES: [&str; 8] = [
    "librivox_0870",
    "librivox_0880",
    "librivox_0890",
    "librivox_0920",
    "librivox_0930",
    "phone_vm_sorry_8k",
    "phone_please_try_call_later_8k",
    "en_two_utterances",
];

/// Runs every fixture; returns the mean word error rate.
async fn run_all(stt: &LocalStt, paced: bool) -> f64 {
    let mut total = 0.0;
    let mut count = 0;
    println!("| fixture | rate | audio ms | final after finalize, ms | WER | text |");
    println!("|---|---|---|---|---|---|");
    for name in NAMES {
        let f = fixture(name);
        let got = transcribe(stt, &f, paced).await;
        assert_eq!(got.len(), f.utterances.len(), "{name}");
        for ((truth, _), (text, ms)) in f.utterances.iter().zip(&got) {
            let e = wer(truth, text);
            println!(
                "| {name} | {} Hz | {} | {ms} | {e:.2} | {text} |",
                f.rate_hz,
                f.samples.len() as u64 * 1000 / u64::from(f.rate_hz)
            );
            assert!(e <= 0.35, "{name}: WER {e:.2}: {text:?} for {truth:?}");
            total += e;
            count += 1;
        }
    }
    let mean = total / f64::from(count);
    println!("mean WER over {count} utterances: {mean:.3}");
    println!("stats: {:?}", stt.stats());
    mean
}

fn provider(dir: &std::path::Path, partials: bool) -> LocalStt {
    #[allow(clippy::disallowed_methods)]
    let load_started = Instant::now();
    let recognizer = WhisperRecognizer::load(dir).unwrap_or_else(|e| panic!("{e}"));
    println!("model load: {} ms", load_started.elapsed().as_millis());
    let mut options = LocalSttOptions::default();
    options.partials = partials;
    LocalStt::new(Arc::new(recognizer), options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whisper_transcribes_the_fixtures_within_a_loose_wer() {
    let Some(dir) = model_dir() else { return };
    let mean = run_all(&provider(&dir, false), false).await;
    assert!(mean <= 0.1, "mean WER {mean:.3}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_real_time_with_partials_the_wer_is_the_same() {
    if std::env::var_os("BRISVOX_STT_PACED").is_none() {
        eprintln!("skipped: set BRISVOX_STT_PACED=1 (scripts/test-local-stt.sh) for the paced run");
        return;
    }
    let Some(dir) = model_dir() else { return };
    let stt = provider(&dir, true);
    let mean = run_all(&stt, true).await;
    assert!(mean <= 0.1, "mean WER {mean:.3}");
    let stats = stt.stats();
    assert!(stats.partials > 0, "{stats:?}");
}
