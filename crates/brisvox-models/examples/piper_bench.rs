//! Times the local Piper voice: per sentence, espeak-ng phonemisation (one
//! `espeak-ng -q --ipa` process per clause, as the provider runs them) and
//! synthesis on the voice's pool resampled to 24 kHz, with the real-time
//! factor (synthesis time / audio length); and the time to first audio of a
//! two-sentence reply (phonemes of the first chunk + its synthesis).
//!
//! `cargo run --release -p brisvox-models --example piper_bench [RUNS]`
//! Needs the fetched voice (scripts/fetch-models.sh) and the espeak-ng program.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brisvox_models::piper::{PiperSettings, PiperVoice};

const RATE_HZ: u32 = 24_000;

const SENTENCES: [&str; 5] = [
    "Hello, thanks for calling.",
    "The quick brown fox jumps over the lazy dog.",
    "I can help you with that: first, tell me your name; then we'll start.",
    "Your appointment is on Tuesday at three thirty in the afternoon.",
    "Is there anything else I can do for you today?",
];

/// The clause's IPA from espeak-ng (clauses cut at `,:;` here, as the provider does
/// for these sentences), with Piper's punctuation.
fn phonemize(sentence: &str) -> String {
    let mut out = String::new();
    for clause in sentence.split_inclusive([',', ':', ';']) {
        let mut child = Command::new("espeak-ng")
            .args(["-q", "--ipa", "-b", "1", "-v", "en-us"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("espeak-ng runs");
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(clause.as_bytes())
            .expect("stdin");
        let o = child.wait_with_output().expect("espeak-ng output");
        let ipa = String::from_utf8(o.stdout).expect("utf-8");
        out.push_str(&ipa.split_whitespace().collect::<Vec<_>>().join(" "));
        let end = clause.trim_end().chars().last().unwrap_or(' ');
        match end {
            ',' | ':' | ';' => {
                out.push(end);
                out.push(' ');
            }
            '.' | '?' | '!' => out.push(end),
            _ => {}
        }
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let load = Instant::now();
    let voice = Arc::new(PiperVoice::load(PiperSettings::default()).expect("the voice loads"));
    println!("load: {:.0} ms", ms(load.elapsed()));
    // Warm-up.
    voice
        .synthesize(&phonemize(SENTENCES[0]), RATE_HZ)
        .unwrap()
        .await
        .unwrap();

    println!(
        "\n| sentence | audio s | phonemes ms (median) | synthesis ms (median, min-max) | RTF (median) |"
    );
    println!("|---|---|---|---|---|");
    let mut all_rtf = Vec::new();
    for s in SENTENCES {
        let (mut ph_ms, mut syn_ms, mut rtf) = (Vec::new(), Vec::new(), Vec::new());
        let mut secs = 0.0;
        for _ in 0..runs {
            let t = Instant::now();
            let ph = phonemize(s);
            ph_ms.push(ms(t.elapsed()));
            let t = Instant::now();
            let audio = voice.synthesize(&ph, RATE_HZ).unwrap().await.unwrap();
            let took = t.elapsed();
            secs = audio.len() as f64 / f64::from(RATE_HZ);
            syn_ms.push(ms(took));
            rtf.push(took.as_secs_f64() / secs);
        }
        let lo = syn_ms.iter().cloned().fold(f64::MAX, f64::min);
        let hi = syn_ms.iter().cloned().fold(0.0, f64::max);
        let r = median(rtf.clone());
        all_rtf.extend(rtf);
        println!(
            "| {s} | {secs:.2} | {:.0} | {:.0} ({lo:.0}-{hi:.0}) | {r:.2} |",
            median(ph_ms),
            median(syn_ms)
        );
    }
    println!("\nRTF over all runs: median {:.2}", median(all_rtf));

    // A two-sentence reply as two segmenter chunks: first audio after the
    // first chunk's phonemes and synthesis; the second is synthesised after.
    let reply = [
        "Sure, I can do that.",
        "Your table for two is booked for seven tonight.",
    ];
    let mut first = Vec::new();
    let mut whole = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let a = voice
            .synthesize(&phonemize(reply[0]), RATE_HZ)
            .unwrap()
            .await
            .unwrap();
        first.push(ms(t.elapsed()));
        let b = voice
            .synthesize(&phonemize(reply[1]), RATE_HZ)
            .unwrap()
            .await
            .unwrap();
        whole.push(ms(t.elapsed()));
        let _ = (a, b);
    }
    println!(
        "\ntwo-sentence reply: time to first audio median {:.0} ms (min {:.0}, max {:.0}); both sentences {:.0} ms",
        median(first.clone()),
        first.iter().cloned().fold(f64::MAX, f64::min),
        first.iter().cloned().fold(0.0, f64::max),
        median(whole)
    );
}
