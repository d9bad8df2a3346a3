//! A fake [`Recognizer`] for the local STT adapter's tests: it records what it
//! was given and where it ran, answers from a script, and can be held until
//! the test releases it.

#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisvox_core::AudioFrame;
use brisvox_providers::local::{LocalSttOptions, Recognized, Recognizer, RecognizerError};
use brisvox_providers::{SendError, SttEvent, SttEvents, SttSender};

/// What one call of the fake saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Samples given.
    pub len: usize,
    /// Largest absolute sample.
    pub peak: f32,
    /// The thread it ran on.
    pub thread: Option<String>,
    /// The draft it was given.
    pub draft: Vec<u32>,
}

/// The default options without partials: one recognition per finalize.
pub fn no_partials() -> LocalSttOptions {
    let mut options = LocalSttOptions::default();
    options.partials = false;
    options
}

/// How the fake answers a call.
pub enum Reply {
    Text(String),
    /// Text with tokens: one per word, numbered by the word's first letter.
    Tokens(String),
    Fail(&'static str),
    Panic,
    /// Sleeps, then answers with the text.
    Slow(Duration, String),
}

type Script = Box<dyn Fn(usize) -> Reply + Send + Sync>;

pub struct FakeRecognizer {
    pub calls: Mutex<Vec<Call>>,
    /// Calls started (counted before the gate).
    pub entered: AtomicUsize,
    script: Script,
    /// When set, each call waits for one message first.
    gate: Option<Mutex<mpsc::Receiver<()>>>,
    english_only: bool,
}

impl FakeRecognizer {
    /// Answers call `i` (from 0) with `script(i)`.
    pub fn new(script: impl Fn(usize) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(FakeRecognizer {
            calls: Mutex::new(Vec::new()),
            entered: AtomicUsize::new(0),
            script: Box::new(script),
            gate: None,
            english_only: false,
        })
    }

    /// Answers `utterance N` (from 1) to every call.
    pub fn numbering() -> Arc<Self> {
        Self::new(|i| Reply::Text(format!(" utterance {} ", i + 1)))
    }

    /// Like [`FakeRecognizer::numbering`], but each call waits for a release.
    pub fn gated() -> (Arc<Self>, mpsc::Sender<()>) {
        let (tx, rx) = mpsc::channel();
        let fake = Arc::new(FakeRecognizer {
            calls: Mutex::new(Vec::new()),
            entered: AtomicUsize::new(0),
            script: Box::new(|i| Reply::Text(format!("utterance {}", i + 1))),
            gate: Some(Mutex::new(rx)),
            english_only: false,
        });
        (fake, tx)
    }

    pub fn english_only() -> Arc<Self> {
        Arc::new(FakeRecognizer {
            calls: Mutex::new(Vec::new()),
            entered: AtomicUsize::new(0),
            script: Box::new(|_| Reply::Text(String::new())),
            gate: None,
            english_only: true,
        })
    }

    /// Waits (real time, up to the test kit's `PATIENCE`) until `n` calls have started.
    pub async fn wait_entered(&self, n: usize) {
        let what = format!("the recognizer called {n} times");
        brisvox_testkit::eventually_async(brisvox_testkit::PATIENCE, what, || async {
            self.entered.load(Ordering::SeqCst) >= n
        })
        .await;
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl Recognizer for FakeRecognizer {
    fn recognize(
        &self,
        samples: &[f32],
        draft: &[u32],
        _cancel: &AtomicBool,
    ) -> Result<Recognized, RecognizerError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            let _ = gate.lock().unwrap().recv();
        }
        let i = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(Call {
                len: samples.len(),
                peak: samples.iter().fold(0.0f32, |m, s| m.max(s.abs())),
                thread: std::thread::current().name().map(str::to_owned),
                draft: draft.to_vec(),
            });
            calls.len() - 1
        };
        let text = |t: String| Recognized {
            text: t,
            tokens: Vec::new(),
        };
        match (self.script)(i) {
            Reply::Text(t) => Ok(text(t)),
            Reply::Tokens(t) => Ok(Recognized {
                tokens: word_tokens(&t),
                text: t,
            }),
            Reply::Fail(reason) => Err(RecognizerError::new(reason)),
            Reply::Panic => panic!("fake recognizer panics on purpose"),
            Reply::Slow(d, t) => {
                std::thread::sleep(d);
                Ok(text(t))
            }
        }
    }

    fn supports_language(&self, language: &str) -> bool {
        !self.english_only || language == "en"
    }
}

/// One token per word: the word's length times 100 plus its first byte, so
/// the same word is the same token.
pub fn word_tokens(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|w| w.len() as u32 * 100 + u32::from(w.as_bytes()[0]))
        .collect()
}

/// A 20 ms frame at `rate_hz` of a constant `level`.
pub fn frame(rate_hz: u32, level: i16) -> AudioFrame {
    let n = (rate_hz / 50) as usize;
    AudioFrame::from_samples(&vec![level; n], rate_hz).unwrap()
}

/// Sends `count` frames, waiting while the session's ring is full.
pub async fn send_frames(sender: &SttSender, count: usize, frame: &AudioFrame) {
    for _ in 0..count {
        loop {
            match sender.send_audio(frame) {
                Ok(()) => break,
                Err(SendError::Full) => tokio::time::sleep(Duration::from_millis(1)).await,
                Err(e) => panic!("send failed: {e:?}"),
            }
        }
    }
}

/// The next event that is not audio-related noise, within 10 s.
pub async fn next_event(events: &mut SttEvents) -> SttEvent {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event within 10 s")
        .expect("the session is open")
}

/// The text of a final, or a panic naming what came instead.
pub fn final_text(event: SttEvent) -> String {
    match event {
        SttEvent::Final {
            text,
            from_finalize: true,
            ..
        } => text,
        other => panic!("expected a final, got {other:?}"),
    }
}
