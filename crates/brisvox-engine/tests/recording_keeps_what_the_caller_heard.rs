//! A call's recording holds what was sent and heard: the caller's audio on the
//! left channel sample for sample, the bot's on the right up to the moment the
//! caller interrupted it (the cleared rest is silence), a transcript with the
//! turns' times; and writing it leaves whole files or none (a full disk or a
//! full budget fails the recording with an error).

use std::io::Write;
use std::time::{Duration, Instant};

use brisvox_audio::wav::read_wav;
use brisvox_engine::recording::{
    CallRecorder, RecordingError, RecordingLimits, Role, write, write_into,
};

const FRAME: usize = 320;

fn at(t0: Instant, ms: u64) -> Instant {
    t0 + Duration::from_millis(ms)
}

/// Caller frame `i`: a ramp that differs in every frame.
fn caller_frame(i: usize) -> Vec<i16> {
    (0..FRAME).map(|s| (i * FRAME + s) as i16).collect()
}

fn bot_frame(i: usize) -> Vec<i16> {
    vec![-1000 - i as i16; FRAME]
}

#[allow(clippy::disallowed_methods)] // a test's time zero
fn recorded_call() -> (brisvox_engine::recording::Recording, Vec<i16>, Vec<i16>) {
    let t0 = Instant::now();
    let mut r = CallRecorder::new("CA-1", t0, 1_700_000_000_000, RecordingLimits::default());
    let mut caller = Vec::new();
    // One second of caller audio, 20 ms a frame; the last 200 ms in a burst.
    for i in 0..50 {
        let arrived = if i < 40 { 20 * i as u64 } else { 800 };
        let f = caller_frame(i);
        r.handle_caller_audio(at(t0, arrived), &f);
        caller.extend_from_slice(&f);
    }
    r.handle_user_text(at(t0, 250), "what time is it");
    // The bot answers from 300 ms, 30 frames handed over; the caller cuts it at 500 ms.
    r.handle_bot_started(at(t0, 300), 1);
    r.handle_bot_text(1, "It is ");
    r.handle_bot_text(1, "noon.");
    for i in 0..30 {
        r.handle_bot_audio(at(t0, 300 + 20 * i as u64), &bot_frame(i));
    }
    r.handle_bot_cleared(at(t0, 500));
    r.handle_bot_stopped(at(t0, 520), 1);
    let mut bot = vec![0i16; 300 * 16];
    for i in 0..10 {
        bot.extend_from_slice(&bot_frame(i));
    }
    (r.finish(at(t0, 1200)), caller, bot)
}

#[test]
fn the_wav_holds_the_caller_left_and_the_heard_bot_right() {
    let (rec, caller, bot_heard) = recorded_call();
    let wav = read_wav(&rec.wav).expect("a valid WAV");
    assert_eq!((wav.spec.channels, wav.spec.sample_rate_hz), (2, 16_000));
    let left: Vec<i16> = wav.samples.iter().step_by(2).copied().collect();
    let right: Vec<i16> = wav.samples.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(
        left.len(),
        1200 * 16,
        "the recording runs to the call's end"
    );
    assert_eq!(
        &left[..caller.len()],
        &caller[..],
        "caller audio, sample for sample"
    );
    assert!(left[caller.len()..].iter().all(|&s| s == 0));
    assert_eq!(
        &right[..bot_heard.len()],
        &bot_heard[..],
        "bot audio until the barge-in"
    );
    assert!(
        right[bot_heard.len()..].iter().all(|&s| s == 0),
        "nothing after the clear: the caller never heard it"
    );
}

#[test]
fn the_transcript_has_the_turns_with_their_times() {
    let (rec, _, _) = recorded_call();
    let t = &rec.transcript;
    assert_eq!(
        (t.call_id.as_str(), t.duration_ms, t.truncated),
        ("CA-1", 1200, false)
    );
    assert_eq!(t.entries.len(), 2);
    assert_eq!(t.entries[0].role, Role::User);
    assert_eq!(t.entries[0].text, "what time is it");
    assert_eq!(t.entries[0].start_ms, 250);
    let bot = &t.entries[1];
    assert_eq!(
        (bot.role, bot.text.as_str(), bot.turn),
        (Role::Bot, "It is noon.", Some(1))
    );
    assert_eq!(
        (bot.start_ms, bot.end_ms, bot.interrupted),
        (300, 500, true)
    );
}

#[test]
#[allow(clippy::disallowed_methods)] // a test's time zero
fn the_duration_cap_truncates() {
    let t0 = Instant::now();
    let limits = RecordingLimits {
        max_duration_ms: 100,
    };
    let mut r = CallRecorder::new("c", t0, 0, limits);
    for i in 0..10 {
        r.handle_caller_audio(at(t0, 20 * i), &caller_frame(i as usize));
    }
    let rec = r.finish(at(t0, 5000));
    assert!(rec.transcript.truncated);
    assert_eq!(rec.transcript.duration_ms, 100);
    assert_eq!(read_wav(&rec.wav).unwrap().samples.len(), 1600 * 2);
}

#[test]
fn files_are_written_whole() {
    let (rec, _, _) = recorded_call();
    let dir = tempfile::tempdir().unwrap();
    let files = write(dir.path(), &rec, None).unwrap();
    assert_eq!(std::fs::read(&files.wav).unwrap(), rec.wav);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files.transcript).unwrap()).unwrap();
    assert_eq!(json["channels"], serde_json::json!(["caller", "bot"]));
    assert_eq!(json["entries"][1]["interrupted"], true);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "no .part files left: {names:?}");
}

/// A writer that fails like a full disk after `room` bytes.
struct FullDisk {
    room: usize,
}

impl Write for FullDisk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_disk_or_budget_fails_the_recording_and_leaves_nothing() {
    let (rec, _, _) = recorded_call();
    let err = write_into(&rec, &mut FullDisk { room: 1000 }, &mut Vec::new()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(28));

    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    assert!(matches!(
        write(&not_a_dir, &rec, None),
        Err(RecordingError::Io { .. })
    ));
    let budget = rec.wav.len() as u64; // too small once the transcript is counted
    assert!(matches!(
        write(dir.path(), &rec, Some(budget)),
        Err(RecordingError::OverBudget { .. })
    ));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the test's own file"
    );
}
