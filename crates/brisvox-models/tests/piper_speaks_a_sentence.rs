//! The Piper voice turns a sentence's phonemes into speech-like audio: not
//! silent, of a plausible length for the words, at the voice's 22.05 kHz; on
//! the pool as on the calling thread; and a terminated run stops with an error.

use std::sync::Arc;
use std::time::Duration;

use brisvox_models::piper::PiperVoice;

mod piper_common;

/// "The quick brown fox jumps over the lazy dog." from the goldens.
fn fox(voice: &PiperVoice) -> String {
    let _ = voice;
    piper_common::goldens()[1].sentences[0].phonemes.clone()
}

fn rms(samples: &[i16]) -> f64 {
    let sum: f64 = samples.iter().map(|&s| f64::from(s).powi(2)).sum();
    (sum / samples.len().max(1) as f64).sqrt()
}

#[test]
fn a_sentence_is_non_silent_audio_of_plausible_length() {
    let Some(voice) = piper_common::voice_or_skip("a_sentence_is_non_silent") else {
        return;
    };
    assert_eq!(voice.sample_rate_hz(), 22_050);
    let audio = voice.synthesize_blocking(&fox(&voice)).unwrap();
    let secs = audio.len() as f64 / 22_050.0;
    // Nine words at a normal pace: 1.5-5 s.
    assert!((1.5..5.0).contains(&secs), "{secs} s");
    let level = rms(&audio);
    assert!(level > 500.0, "rms {level}");
    // Speech has pauses and loud parts: 50 ms windows differ a lot.
    let windows: Vec<f64> = audio.chunks(1_102).map(rms).collect();
    let loud = windows.iter().cloned().fold(0.0, f64::max);
    let quiet = windows.iter().cloned().fold(f64::MAX, f64::min);
    assert!(loud > 10.0 * quiet.max(1.0), "loud {loud} quiet {quiet}");
}

#[tokio::test]
async fn the_pool_gives_the_same_audio_length_as_the_blocking_call() {
    let Some(voice) = piper_common::voice_or_skip("the_pool_gives_the_same") else {
        return;
    };
    let phonemes = piper_common::goldens()[3].sentences[0].phonemes.clone();
    let job = Arc::clone(&voice).synthesize(&phonemes, 22_050).unwrap();
    let pooled = tokio::time::timeout(Duration::from_secs(30), job)
        .await
        .expect("a sentence within 30 s")
        .unwrap();
    // The model draws noise (noise_scale, noise_w), so samples differ run to
    // run; lengths stay close.
    let direct = voice.synthesize_blocking(&phonemes).unwrap();
    let ratio = pooled.len() as f64 / direct.len() as f64;
    assert!(
        (0.7..1.4).contains(&ratio),
        "{} vs {}",
        pooled.len(),
        direct.len()
    );
}

#[tokio::test]
async fn the_pool_resamples_to_the_asked_rate() {
    let Some(voice) = piper_common::voice_or_skip("the_pool_resamples") else {
        return;
    };
    let phonemes = piper_common::goldens()[3].sentences[0].phonemes.clone();
    for rate in [8_000u32, 16_000, 24_000, 48_000] {
        let audio = voice.synthesize(&phonemes, rate).unwrap().await.unwrap();
        let secs = audio.len() as f64 / f64::from(rate);
        assert!((0.8..4.0).contains(&secs), "{rate} Hz: {secs} s");
        assert!(rms(&audio) > 300.0, "{rate} Hz: rms {}", rms(&audio));
    }
    assert!(voice.synthesize(&phonemes, 0).is_err());
}

#[test]
fn a_terminated_run_stops_with_an_error() {
    let Some(voice) = piper_common::voice_or_skip("a_terminated_run_stops") else {
        return;
    };
    let ids = voice.config().phoneme_ids(&fox(&voice)).ids;
    let options = ort::session::RunOptions::new().unwrap();
    options.terminate().unwrap();
    // The run ends with ONNX Runtime's termination error, not with audio: it did
    // not run to completion. No wall-clock bound: how fast it gives up depends on
    // the machine and its load, not on the behaviour.
    let err = voice.run_ids(&ids, Some(&options)).unwrap_err();
    assert!(err.to_string().contains("terminate"), "{err}");
    // The same ids without the flag do run to completion on the same voice: the
    // error above came from the termination, and it left the voice usable.
    let audio = voice.run_ids(&ids, None).unwrap();
    assert!(audio.len() > 22_050, "{} samples", audio.len());
}
