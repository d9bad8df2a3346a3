//! The Piper TTS starts an answer where its sound starts: the quiet the voice
//! puts before the first sentence of a context is cut to
//! [`LEAD_IN_KEEP_MS`], while the quiet before its later sentences (the
//! pauses between them) stays, and the next context is cut again. Over a
//! stand-in voice (each sentence 200 ms of silence, then 300 ms of sound).
//! Needs `espeak-ng` for the phonemes: skipped when it is missing and `CI` is
//! unset, failed when `CI` is set.

use std::time::Duration;

use brisvox_core::Epoch;
use brisvox_providers::local::{LEAD_IN_KEEP_MS, PhonemeVoice, PiperConfig, PiperTts};
use brisvox_providers::{
    BoxFuture, ContextId, ProviderError, TtsConfig, TtsEvent, TtsProvider, TtsSession,
};

const RATE: u32 = 16_000;
const QUIET: usize = RATE as usize / 5;
const SOUND: usize = RATE as usize * 3 / 10;

#[derive(Debug)]
struct QuietThenSound;

impl PhonemeVoice for QuietThenSound {
    fn name(&self) -> &str {
        "quiet-then-sound"
    }

    fn espeak_voice(&self) -> &str {
        "en-us"
    }

    fn speak(
        &self,
        _phonemes: &str,
        rate_hz: u32,
    ) -> BoxFuture<'static, Result<Vec<i16>, ProviderError>> {
        assert_eq!(rate_hz, RATE);
        let mut samples = vec![0i16; QUIET];
        samples.extend((0..SOUND).map(|i| if i % 2 == 0 { 3_000 } else { -3_000 }));
        Box::pin(async move { Ok(samples) })
    }
}

fn espeak_present() -> bool {
    let ok = std::process::Command::new("espeak-ng")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "espeak-ng is missing"
    );
    if !ok {
        eprintln!("SKIPPED: espeak-ng is missing");
    }
    ok
}

/// The audio of `ctx` until its `Done`.
async fn audio_of(session: &mut TtsSession, ctx: ContextId) -> Vec<i16> {
    let mut audio = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), session.recv())
            .await
            .expect("an event within 10 s")
            .expect("the session is open");
        match event {
            TtsEvent::Audio {
                ctx: c, samples, ..
            } if c == ctx => audio.extend(samples),
            TtsEvent::Done { ctx: c } if c == ctx => return audio,
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Lengths of the quiet runs before each run of sound.
fn quiet_runs(audio: &[i16]) -> Vec<usize> {
    let mut runs = Vec::new();
    let mut quiet = 0;
    let mut in_sound = false;
    for &s in audio {
        if s == 0 {
            quiet += 1;
            in_sound = false;
        } else if !in_sound {
            runs.push(quiet);
            quiet = 0;
            in_sound = true;
        }
    }
    runs
}

#[tokio::test]
async fn each_answer_starts_at_its_sound_and_keeps_its_pauses() {
    if !espeak_present() {
        return;
    }
    let tts = PiperTts::new(std::sync::Arc::new(QuietThenSound), PiperConfig::default());
    let mut config = TtsConfig::default();
    config.sample_rate_hz = RATE;
    let mut session = tts.connect(config).await.unwrap();
    let tx = session.sender().clone();
    let keep = (RATE * LEAD_IN_KEEP_MS / 1000) as usize;

    let answer = ContextId::new(Epoch::ZERO.next(), 0);
    tx.start_context(answer).await.unwrap();
    tx.send_text(answer, "Hello there. How are you?")
        .await
        .unwrap();
    tx.send_text(answer, "Goodbye!").await.unwrap();
    tx.flush(answer).await.unwrap();
    let audio = audio_of(&mut session, answer).await;
    assert_eq!(
        quiet_runs(&audio),
        vec![keep, QUIET, QUIET],
        "the first sentence's lead-in cut, the pauses before the next two kept"
    );
    assert_eq!(audio.len(), keep + SOUND + 2 * (QUIET + SOUND));

    let next = ContextId::new(Epoch::ZERO.next().next(), 0);
    tx.start_context(next).await.unwrap();
    tx.send_text(next, "Yes.").await.unwrap();
    tx.flush(next).await.unwrap();
    let audio = audio_of(&mut session, next).await;
    assert_eq!(quiet_runs(&audio), vec![keep], "the next answer is cut too");
    assert_eq!(audio.len(), keep + SOUND);
}
