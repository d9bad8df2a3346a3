//! The Piper TTS over a stand-in voice: a context's chunks are spoken in order
//! (one synthesis per sentence, audio at the session's rate as soon as each is
//! ready), `Done` follows the flush; a cancel stops the running synthesis,
//! drops the chunks still waiting and lets the next context speak; a voice
//! failure ends only its context. Needs `espeak-ng` for the phonemes: skipped
//! when it is missing and `CI` is unset, failed when `CI` is set.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::local::{PhonemeVoice, PiperConfig, PiperTts};
use brisvox_providers::{
    BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession,
};

/// Speaks each sentence as `delay` then 0.5 s of a constant: the number of the call.
#[derive(Debug)]
struct StandInVoice {
    delay: Duration,
    heard: Mutex<Vec<String>>,
    fail_on: Option<&'static str>,
}

impl StandInVoice {
    fn new(delay_ms: u64) -> Arc<Self> {
        Arc::new(StandInVoice {
            delay: Duration::from_millis(delay_ms),
            heard: Mutex::new(Vec::new()),
            fail_on: None,
        })
    }

    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }
}

impl PhonemeVoice for StandInVoice {
    fn name(&self) -> &str {
        "stand-in"
    }

    fn espeak_voice(&self) -> &str {
        "en-us"
    }

    fn speak(
        &self,
        phonemes: &str,
        rate_hz: u32,
    ) -> BoxFuture<'static, Result<Vec<i16>, ProviderError>> {
        let mut heard = self.heard.lock().unwrap();
        heard.push(phonemes.to_owned());
        let n = heard.len() as i16;
        let delay = self.delay;
        let fail = self.fail_on.is_some_and(|f| phonemes.contains(f));
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            if fail {
                return Err(ProviderError::Protocol {
                    reason: "stand-in failure".into(),
                });
            }
            Ok(vec![n; rate_hz as usize / 2])
        })
    }
}

fn espeak_present(test: &str) -> bool {
    let ok = std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("{test}: espeak-ng is missing");
    }
    if !ok {
        eprintln!("SKIPPED {test}: espeak-ng is missing");
    }
    ok
}

async fn next(session: &mut TtsSession) -> TtsEvent {
    tokio::time::timeout(Duration::from_secs(10), session.recv())
        .await
        .expect("an event within 10 s")
        .expect("the session is open")
}

fn config(rate: u32) -> TtsConfig {
    let mut c = TtsConfig::default();
    c.sample_rate_hz = rate;
    c
}

#[tokio::test]
async fn chunks_are_spoken_in_order_at_the_session_rate() {
    if !espeak_present("chunks_are_spoken_in_order") {
        return;
    }
    let voice = StandInVoice::new(20);
    let tts = PiperTts::new(voice.clone(), PiperConfig::default());
    let mut session = tts.connect(config(16_000)).await.unwrap();
    let ctx = ContextId::new(Epoch::ZERO.next(), 0);
    let tx = session.sender().clone();
    tx.start_context(ctx).await.unwrap();
    tx.send_text(ctx, "Hello there. How are you?")
        .await
        .unwrap();
    tx.send_text(ctx, "Goodbye!").await.unwrap();
    tx.flush(ctx).await.unwrap();
    let mut values = Vec::new();
    loop {
        match next(&mut session).await {
            TtsEvent::Audio {
                ctx: c,
                samples,
                sample_rate_hz,
            } => {
                assert_eq!((c, sample_rate_hz), (ctx, 16_000));
                assert!(samples.len() <= 640, "at most 40 ms per event");
                values.extend(samples);
            }
            TtsEvent::Done { ctx: c } => {
                assert_eq!(c, ctx);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // Three sentences, each 0.5 s, in the order they were sent.
    assert_eq!(values.len(), 3 * 8_000);
    for (i, part) in values.chunks(8_000).enumerate() {
        assert!(part.iter().all(|&v| v == i as i16 + 1), "sentence {i}");
    }
    let heard = voice.heard();
    assert_eq!(heard.len(), 3);
    assert!(
        heard[0].ends_with('.') && heard[1].ends_with('?') && heard[2].ends_with('!'),
        "{heard:?}"
    );
    assert_eq!(tts.stats().sentences_spoken, 3);
}

#[tokio::test]
async fn a_cancel_stops_the_synthesis_and_drops_the_waiting_chunks() {
    if !espeak_present("a_cancel_stops_the_synthesis") {
        return;
    }
    let voice = StandInVoice::new(400);
    let tts = PiperTts::new(voice.clone(), PiperConfig::default());
    let mut session = tts.connect(config(24_000)).await.unwrap();
    let tx = session.sender().clone();
    let first = ContextId::new(Epoch::ZERO.next(), 0);
    tx.start_context(first).await.unwrap();
    for chunk in ["One.", "Two.", "Three.", "Four."] {
        tx.send_text(first, chunk).await.unwrap();
    }
    tx.flush(first).await.unwrap();
    // First audio of chunk one, then barge-in.
    assert!(matches!(next(&mut session).await, TtsEvent::Audio { ctx, .. } if ctx == first));
    tx.cancel(first);
    let second = ContextId::new(Epoch::ZERO.next().next(), 0);
    tx.start_context(second).await.unwrap();
    tx.send_text(second, "Yes.").await.unwrap();
    tx.flush(second).await.unwrap();
    let mut audio = 0;
    loop {
        match next(&mut session).await {
            TtsEvent::Audio { ctx, samples, .. } => {
                assert_eq!(ctx, second, "no audio of the cancelled context");
                audio += samples.len();
            }
            TtsEvent::Done { ctx } => {
                assert_eq!(ctx, second);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(audio, 12_000);
    // Chunks two to four never reached the voice (at most two had: the first
    // and, if the cancel raced it, the second), so the new context had nothing
    // of theirs to wait for. (No wall-clock bound: a loaded machine is slow.)
    let heard = voice.heard();
    assert!(
        heard.len() <= 3 && heard.last().unwrap().starts_with('j'),
        "{heard:?}"
    );
}

#[tokio::test]
async fn a_voice_failure_ends_only_its_context() {
    if !espeak_present("a_voice_failure_ends_only_its_context") {
        return;
    }
    let voice = Arc::new(StandInVoice {
        delay: Duration::from_millis(5),
        heard: Mutex::new(Vec::new()),
        fail_on: Some("ɹ"),
    });
    let tts = PiperTts::new(voice, PiperConfig::default());
    let mut session = tts.connect(config(16_000)).await.unwrap();
    let tx = session.sender().clone();
    let bad = ContextId::new(Epoch::ZERO.next(), 0);
    tx.start_context(bad).await.unwrap();
    tx.send_text(bad, "Red.").await.unwrap();
    tx.send_text(bad, "Yes.").await.unwrap();
    tx.flush(bad).await.unwrap();
    match next(&mut session).await {
        TtsEvent::Error { ctx, .. } => assert_eq!(ctx, Some(bad)),
        other => panic!("expected the context's error, got {other:?}"),
    }
    let good = ContextId::new(Epoch::ZERO.next(), 1);
    tx.start_context(good).await.unwrap();
    tx.send_text(good, "Yes.").await.unwrap();
    tx.flush(good).await.unwrap();
    loop {
        match next(&mut session).await {
            TtsEvent::Audio { ctx, .. } => assert_eq!(ctx, good),
            TtsEvent::Done { ctx } => {
                assert_eq!(ctx, good);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_missing_espeak_is_an_error_naming_the_package() {
    let tts = PiperTts::new(
        StandInVoice::new(0),
        PiperConfig {
            espeak_program: "/nonexistent/espeak-ng".into(),
            ..PiperConfig::default()
        },
    );
    let err = tts.probe_blocking().unwrap_err();
    assert!(
        err.to_string().contains("apt-get install -y espeak-ng"),
        "{err}"
    );
    let err = tts.phonemize("Hello.").await.unwrap_err();
    assert!(err.to_string().contains("espeak-ng"), "{err}");
}
