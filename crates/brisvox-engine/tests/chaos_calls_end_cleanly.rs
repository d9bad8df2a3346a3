//! The chaos suite: 100 seeded calls, each with log-normal provider latencies
//! and one injected fault from the list (an STT disconnect, an LLM 5xx
//! before and after its first token, a TTS stall, a slow TTS first byte, the
//! caller hanging up mid-answer; every seventh call has none), on the first or
//! the second turn. Every call ends cleanly with the hang-up, its failure is
//! counted in the [`CallReport`](brisvox_engine::CallReport) by stage and kind,
//! every turn gets exactly one LLM request, the bot never talks over the
//! caller, nothing panics (stage panics would be swallowed by the join, so a
//! panic hook counts them), no task is left behind and the live heap returns
//! to its baseline.
//! (Paused clock, energy VAD, fixed "complete" verdict; a counting allocator
//! of live bytes.)

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use brisvox_core::timeline::TurnEvent;
use brisvox_engine::{CallEnd, CallReport, Models, ProviderStage};
use brisvox_providers::mock::{Fault, FaultPlan, Latency, MockLlmConfig};
use brisvox_providers::{ErrorKind, ProviderError};
use brisvox_testkit::alloc::{CountingAllocator, live_bytes};
use brisvox_testkit::tasks::{alive_tasks, until_alive_tasks};
use common::*;

const CALLS: u64 = 100;
/// A short answer (25 characters, 1.5 s of mock audio): it plays out before
/// the second utterance even with a slow first byte, so any audio over the
/// caller is a bug, not a barge-in.
const ANSWER: &str = "Sure, here is the answer.";
/// The caller hangs up this long after the end of the first utterance: the
/// answer (first audio ~0.95 s after the end of speech) is playing.
const HANGUP_AFTER_END_MS: u64 = 1_900;
/// Live heap bytes the suite may keep after its calls (lazily grown runtime
/// tables); one leaked call would be several times this.
const HEAP_SLACK_BYTES: i64 = 16 * 1024;

/// Panics seen by the hook.
static PANICS: AtomicU64 = AtomicU64::new(0);

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The fault a call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chaos {
    None,
    SttDisconnect,
    LlmServerErrorBeforeFirstToken,
    LlmServerErrorAfterFirstToken,
    TtsStall,
    TtsSlowFirstByte,
    HangupMidAnswer,
}

const KINDS: [Chaos; 7] = [
    Chaos::None,
    Chaos::SttDisconnect,
    Chaos::LlmServerErrorBeforeFirstToken,
    Chaos::LlmServerErrorAfterFirstToken,
    Chaos::TtsStall,
    Chaos::TtsSlowFirstByte,
    Chaos::HangupMidAnswer,
];

/// The seeded mocks of call `seed` with its fault on turn `turn` (0 or 1).
fn mocks(seed: u64, chaos: Chaos, turn: u64) -> Mocks {
    let mocks = Mocks::lognormal(seed);
    mocks.llm.set_config(MockLlmConfig {
        seed,
        first_token: Latency::LogNormal {
            median_ms: LLM_FIRST_TOKEN_MS as f64,
            sigma: 0.3,
        },
        token_interval: Latency::Fixed(30),
        words_per_token: 1,
        default_answer: ANSWER.to_owned(),
    });
    // Varies with the seed: how far the stream gets before the fault.
    let items = 1 + (seed / 7) % 3;
    let items = u32::try_from(items).expect("at most 3");
    let server_error = ProviderError::server(500 + (seed % 4) as u16, "chaos");
    match chaos {
        Chaos::None | Chaos::HangupMidAnswer => {}
        // One interim, then the drop (the session is reconnected; the turn
        // ends on its final timeout with that interim).
        Chaos::SttDisconnect => mocks
            .stt
            .set_faults(FaultPlan::none().at(turn, Fault::DisconnectAfter { items: 1 })),
        Chaos::LlmServerErrorBeforeFirstToken => mocks.llm.set_faults(FaultPlan::none().at(
            turn,
            Fault::FailAfter {
                items: 0,
                error: server_error,
            },
        )),
        Chaos::LlmServerErrorAfterFirstToken => mocks.llm.set_faults(FaultPlan::none().at(
            turn,
            Fault::FailAfter {
                items,
                error: server_error,
            },
        )),
        Chaos::TtsStall => mocks
            .tts
            .set_faults(FaultPlan::none().at(turn, Fault::StallAfter { items })),
        Chaos::TtsSlowFirstByte => mocks.tts.set_faults(FaultPlan::none().at(
            turn,
            Fault::SlowStart {
                factor: 2.0,
                extra_ms: 200 * u64::from(items),
            },
        )),
    }
    mocks
}

/// The failures `chaos` must leave in the report (stage, kind, count).
fn expected_failures(chaos: Chaos) -> Vec<(ProviderStage, ErrorKind, u64)> {
    match chaos {
        Chaos::None | Chaos::TtsSlowFirstByte | Chaos::HangupMidAnswer => vec![],
        Chaos::SttDisconnect => vec![(ProviderStage::Stt, ErrorKind::Disconnected, 1)],
        Chaos::LlmServerErrorBeforeFirstToken => {
            vec![(ProviderStage::LlmBeforeFirstToken, ErrorKind::Server, 1)]
        }
        Chaos::LlmServerErrorAfterFirstToken => {
            vec![(ProviderStage::LlmAfterFirstToken, ErrorKind::Server, 1)]
        }
        Chaos::TtsStall => vec![(ProviderStage::Tts, ErrorKind::Timeout, 1)],
    }
}

/// Checks one finished call; returns whether a hang-up came mid-answer.
fn check_call(seed: u64, chaos: Chaos, turn: u64, run: &Run, mocks: &Mocks, fx: &Fixture) -> bool {
    let r: &CallReport = &run.report;
    let what = format!("seed {seed} ({chaos:?})");
    assert_eq!(r.end, CallEnd::Hangup, "{what}");
    let mut failures: Vec<_> = r
        .provider_failures
        .iter()
        .map(|c| (c.stage, c.kind, c.count))
        .collect();
    failures.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(failures, expected_failures(chaos), "{what}: failures");
    let failed_responses = match chaos {
        Chaos::LlmServerErrorBeforeFirstToken
        | Chaos::LlmServerErrorAfterFirstToken
        | Chaos::TtsStall => 1,
        _ => 0,
    };
    assert_eq!(r.failed_responses, failed_responses, "{what}");
    // Every turn answered by exactly one LLM request.
    let turns = if chaos == Chaos::HangupMidAnswer {
        1
    } else {
        2
    };
    let c = r.turn_counters;
    assert_eq!((c.turns, c.responses), (turns, turns), "{what}: {c:?}");
    assert_eq!((c.barge_ins, c.taken_back), (0, 0), "{what}: {c:?}");
    assert_eq!(mocks.llm.stats().started, turns, "{what}: LLM requests");
    // Only a response failed before its first token is silent.
    let silent = run
        .answered()
        .iter()
        .filter(|t| t.at(TurnEvent::FirstAudioOut).is_none())
        .count();
    let expected_silent = usize::from(chaos == Chaos::LlmServerErrorBeforeFirstToken);
    if chaos != Chaos::HangupMidAnswer {
        assert_eq!(silent, expected_silent, "{what}: silent answers");
    }
    if chaos == Chaos::TtsSlowFirstByte {
        let ttfb = run.answered()[turn as usize].metrics().tts_ttfb;
        let slow = Duration::from_millis(200 * (1 + (seed / 7) % 3));
        assert!(
            ttfb.is_some_and(|t| t >= slow),
            "{what}: first byte {ttfb:?}"
        );
    }
    // No talk-over: no audible bot frame while the caller speaks.
    let audible = run.audible_frames_ms();
    for &at in &audible {
        for &(start, end) in &fx.utterances {
            assert!(
                at < start as f64 || at > end as f64,
                "{what}: bot audio at {at} ms during speech {start}..{end}"
            );
        }
    }
    if chaos != Chaos::HangupMidAnswer {
        return false;
    }
    let hangup = (fx.utterances[0].1 + HANGUP_AFTER_END_MS) as f64;
    let last = audible.iter().copied().fold(0.0, f64::max);
    assert!(
        last <= hangup + 20.0,
        "{what}: audio at {last} ms after the hang-up"
    );
    let turn = &r.turns[0];
    turn.at(TurnEvent::FirstAudioOut).is_some() && turn.at(TurnEvent::LastAudioOut).is_none()
}

fn count_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        default(info);
    }));
}

async fn one_call(seed: u64, chaos: Chaos, turn: u64, fx: &Fixture) -> (Run, Mocks) {
    let mocks = mocks(seed, chaos, turn);
    let caller = match chaos {
        Chaos::HangupMidAnswer => {
            fx.samples[..((fx.utterances[0].1 + HANGUP_AFTER_END_MS) * 16) as usize].to_vec()
        }
        _ => then_silence(fx.samples.clone(), 3_000),
    };
    let mut config = sim_config();
    config.limits.llm_first_token = Duration::from_secs(2);
    config.limits.tts_stall = Duration::from_secs(2);
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        run(caller, config, &mocks, Models::energy_and_complete()),
    )
    .await
    .unwrap_or_else(|_| panic!("seed {seed} ({chaos:?}): the call did not end"));
    (run, mocks)
}

#[tokio::test(start_paused = true)]
async fn a_hundred_faulty_calls_end_cleanly() {
    count_panics();
    // The wall clock, for the suite's runtime (the calls run on the paused clock).
    #[allow(clippy::disallowed_methods)]
    let wall = Instant::now();
    let tasks = alive_tasks();
    let fx = fixture("en_two_utterances");
    // One clean call first: lazily built runtime and timer state is not a leak.
    let warm = one_call(1_000, Chaos::None, 0, &fx).await;
    drop(warm);
    until_alive_tasks(tasks, "the warm-up call's tasks end").await;
    let heap = live_bytes();
    let mut per_kind = [0u64; KINDS.len()];
    let mut mid_answer = 0;
    let mut failures = 0;
    for seed in 0..CALLS {
        let kind = (seed % KINDS.len() as u64) as usize;
        let chaos = KINDS[kind];
        let turn = (seed / KINDS.len() as u64) % 2;
        let (run, mocks) = one_call(seed, chaos, turn, &fx).await;
        mid_answer += u64::from(check_call(seed, chaos, turn, &run, &mocks, &fx));
        failures += run
            .report
            .provider_failures
            .iter()
            .map(|c| c.count)
            .sum::<u64>();
        per_kind[kind] += 1;
        drop((run, mocks));
        // Provider session tasks see their channels close and end on their next poll.
        until_alive_tasks(tasks, format_args!("seed {seed}: no task left")).await;
    }
    let grown = live_bytes() - heap;
    println!(
        "{CALLS} calls ({:?}), {failures} provider failures counted, {mid_answer} hang-ups \
         mid-answer, heap {grown:+} bytes over the baseline, {} panics, wall {:?}",
        KINDS.iter().zip(per_kind).collect::<Vec<_>>(),
        PANICS.load(Ordering::Relaxed),
        wall.elapsed()
    );
    assert_eq!(PANICS.load(Ordering::Relaxed), 0, "a stage panicked");
    let faulty = per_kind[1..5].iter().sum::<u64>();
    assert_eq!(failures, faulty, "one counted failure per faulty call");
    assert!(
        mid_answer * 2 >= per_kind[6],
        "{mid_answer} of {} hang-ups came mid-answer",
        per_kind[6]
    );
    assert!(
        grown.abs() <= HEAP_SLACK_BYTES,
        "live heap {grown:+} bytes after {CALLS} calls"
    );
}
