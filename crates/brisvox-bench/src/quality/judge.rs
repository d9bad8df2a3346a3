//! Judging one call from the outside: what the caller did (the fixture's
//! [`Script`]) against when the bot's audio arrived and when the server sent
//! `clear`. Pure: times in µs from the start of the fixture.
//!
//! - The bot's audio is grouped into **runs**: non-silent messages less than
//!   [`RUN_GAP_US`] apart.
//! - A **turn** that starts while the bot is silent is answered when the first
//!   run after its start begins after its end (V2V = that start minus the end);
//!   a run that begins during the turn is a **premature end** (the bot answered
//!   a pause inside the turn); no run before the next turn (or within the
//!   response window) is a **missed turn**; a turn that starts while the bot is
//!   still speaking (and is not meant to interrupt) is counted apart.
//! - A **barge-in** turn (sidecar `barge_in`) that starts while the bot speaks:
//!   the **barge-in time** is from its onset to the end of the bot's run (its
//!   last audio at the client); **talk-over** when that exceeds
//!   [`TALK_OVER_US`]; then it is answered (or not) like any turn, counting
//!   from the end of the bot's run.
//! - An **overlap** (backchannel, noise) over the bot's speech **cuts** the bot
//!   when the server sends `clear` within [`CUT_WINDOW_US`] of its onset; the
//!   bot **speaks again** when a run starts after that `clear` and before the
//!   next turn (a resume of the interrupted answer, or an answer to the
//!   backchannel: from the outside they look the same).

use serde::Serialize;

use super::script::Script;

/// Bot audio messages closer than this belong to one run.
pub(crate) const RUN_GAP_US: u64 = 250_000;
/// Audio of one message (the routes send 20 ms frames).
pub(crate) const FRAME_US: u64 = 20_000;
/// A run that ended this little before an onset still counts as speaking.
pub(crate) const SPEAKING_HOLD_US: u64 = 100_000;
/// A `clear` this soon after an overlap's onset is its cut.
pub(crate) const CUT_WINDOW_US: u64 = 2_000_000;
/// A barge-in slower than this is talk-over.
pub(crate) const TALK_OVER_US: u64 = 1_000_000;

/// How a turn went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TurnOutcome {
    /// Answered after its end.
    Answered,
    /// The bot started speaking before the turn was over.
    PrematureEnd,
    /// No answer.
    Missed,
    /// The bot was still speaking when the turn started (not a barge-in fixture).
    BotStillSpeaking,
}

/// One turn, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct TurnJudgement {
    /// What happened.
    pub(crate) outcome: TurnOutcome,
    /// Answer latency after the end of speech, ms.
    pub(crate) v2v_ms: Option<f64>,
    /// A barge-in turn that found the bot speaking.
    pub(crate) barge_in: bool,
    /// Onset to the bot's last audio, ms (barge-in turns).
    pub(crate) barge_in_ms: Option<f64>,
    /// The bot went on over the caller for longer than [`TALK_OVER_US`].
    pub(crate) talk_over: bool,
}

/// How an overlap went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OverlapOutcome {
    /// The bot was not speaking at its onset: nothing to judge.
    NotOverBot,
    /// The bot went on.
    Kept,
    /// The bot was cut.
    Cut,
}

/// One overlap, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct OverlapJudgement {
    /// `backchannel` or `noise`.
    pub(crate) kind: String,
    /// What was said.
    pub(crate) transcript: String,
    /// What happened.
    pub(crate) outcome: OverlapOutcome,
    /// After a cut, the bot spoke again before the next turn.
    pub(crate) spoke_again: bool,
}

/// One call, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub(crate) struct Judged {
    /// Per turn, in order.
    pub(crate) turns: Vec<TurnJudgement>,
    /// Per overlap, in order.
    pub(crate) overlaps: Vec<OverlapJudgement>,
}

/// A run of bot audio: first arrival to the end of the last message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    end: u64,
}

fn runs(bot_audio_us: &[u64]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for &at in bot_audio_us {
        match out.last_mut() {
            Some(r) if at <= r.end + RUN_GAP_US => r.end = r.end.max(at + FRAME_US),
            _ => out.push(Run {
                start: at,
                end: at + FRAME_US,
            }),
        }
    }
    out
}

fn us(ms: f64) -> u64 {
    (ms * 1000.0).round().max(0.0) as u64
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The run playing at `t`, if any.
fn speaking_at(runs: &[Run], t: u64) -> Option<Run> {
    runs.iter()
        .copied()
        .find(|r| r.start <= t && t <= r.end + SPEAKING_HOLD_US)
}

/// Judges one call of `script` (`window_us`: the longest wait for an answer).
pub(crate) fn judge(
    script: &Script,
    bot_audio_us: &[u64],
    clear_us: &[u64],
    window_us: u64,
) -> Judged {
    let runs = runs(bot_audio_us);
    let next_start = |i: usize| script.turns.get(i + 1).map_or(u64::MAX, |t| us(t.start_ms));
    let turns = script
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (start, end) = (us(t.start_ms), us(t.end_ms));
            let limit = next_start(i).min(end.saturating_add(window_us));
            judge_turn(&runs, start, end, t.barge_in, limit)
        })
        .collect();
    let overlaps = script
        .overlaps
        .iter()
        .map(|o| {
            let onset = us(o.start_ms);
            let next = script
                .turns
                .iter()
                .map(|t| us(t.start_ms))
                .find(|&s| s > onset)
                .unwrap_or(u64::MAX);
            let (outcome, spoke_again) = judge_overlap(&runs, clear_us, onset, next);
            OverlapJudgement {
                kind: o.kind.clone(),
                transcript: o.transcript.clone(),
                outcome,
                spoke_again,
            }
        })
        .collect();
    Judged { turns, overlaps }
}

fn judge_turn(runs: &[Run], start: u64, end: u64, barge_in: bool, limit: u64) -> TurnJudgement {
    let playing = speaking_at(runs, start);
    let mut j = TurnJudgement {
        outcome: TurnOutcome::Missed,
        v2v_ms: None,
        barge_in: barge_in && playing.is_some(),
        barge_in_ms: None,
        talk_over: false,
    };
    let from = match playing {
        Some(run) if barge_in => {
            let took = run.end.saturating_sub(start);
            j.barge_in_ms = Some(ms(took));
            j.talk_over = took > TALK_OVER_US;
            run.end
        }
        Some(_) => {
            j.outcome = TurnOutcome::BotStillSpeaking;
            return j;
        }
        None => start,
    };
    if let Some(next) = runs.iter().find(|r| r.start > from && r.start < limit) {
        if next.start <= end {
            j.outcome = TurnOutcome::PrematureEnd;
        } else {
            j.outcome = TurnOutcome::Answered;
            j.v2v_ms = Some(ms(next.start - end));
        }
    }
    j
}

fn judge_overlap(
    runs: &[Run],
    clear_us: &[u64],
    onset: u64,
    next_turn: u64,
) -> (OverlapOutcome, bool) {
    if speaking_at(runs, onset).is_none() {
        return (OverlapOutcome::NotOverBot, false);
    }
    let Some(&clear) = clear_us
        .iter()
        .find(|&&c| c >= onset && c <= onset + CUT_WINDOW_US)
    else {
        return (OverlapOutcome::Kept, false);
    };
    let again = runs.iter().any(|r| r.start > clear && r.start < next_turn);
    (OverlapOutcome::Cut, again)
}

#[cfg(test)]
mod tests {
    use super::super::script::{Overlap, Turn};
    use super::*;

    const MS: u64 = 1000;

    fn turn(start: f64, end: f64, barge_in: bool) -> Turn {
        Turn {
            start_ms: start,
            end_ms: end,
            transcript: String::new(),
            barge_in,
            pauses: Vec::new(),
        }
    }

    /// Bot audio every 20 ms over [from, to) ms.
    fn audio(from: u64, to: u64) -> Vec<u64> {
        (from..to).step_by(20).map(|m| m * MS).collect()
    }

    #[test]
    fn an_answer_after_the_end_is_answered_and_one_inside_is_premature() {
        let script = Script {
            turns: vec![turn(500.0, 3000.0, false), turn(12_000.0, 14_000.0, false)],
            overlaps: Vec::new(),
        };
        let mut bot = audio(2000, 2500); // in a pause of the first turn
        bot.extend(audio(15_000, 19_000));
        let j = judge(&script, &bot, &[], 6_000 * MS);
        assert_eq!(j.turns[0].outcome, TurnOutcome::PrematureEnd);
        assert_eq!(j.turns[1].outcome, TurnOutcome::Answered);
        assert_eq!(j.turns[1].v2v_ms, Some(1000.0));
        let j = judge(&script, &[], &[], 6_000 * MS);
        assert!(j.turns.iter().all(|t| t.outcome == TurnOutcome::Missed));
    }

    #[test]
    fn a_barge_in_is_timed_to_the_bots_last_audio_and_then_answered() {
        let script = Script {
            turns: vec![turn(500.0, 3000.0, false), turn(7000.0, 9000.0, true)],
            overlaps: Vec::new(),
        };
        let mut bot = audio(4000, 7400); // cut 400 ms after the onset
        bot.extend(audio(10_100, 14_000));
        let j = judge(&script, &bot, &[7350 * MS], 6_000 * MS);
        assert_eq!(j.turns[0].v2v_ms, Some(1000.0));
        let b = &j.turns[1];
        assert!(b.barge_in && !b.talk_over);
        assert_eq!(b.barge_in_ms, Some(400.0));
        assert_eq!((b.outcome, b.v2v_ms), (TurnOutcome::Answered, Some(1100.0)));
        // A bot that talks on for 2 s over the caller.
        let bot = audio(4000, 9000);
        let j = judge(&script, &bot, &[], 6_000 * MS);
        assert!(j.turns[1].talk_over);
    }

    #[test]
    fn an_overlap_is_cut_only_by_a_clear_and_speaking_again_is_seen() {
        let script = Script {
            turns: vec![turn(500.0, 3000.0, false), turn(12_000.0, 14_000.0, false)],
            overlaps: vec![Overlap {
                kind: "backchannel".into(),
                transcript: "mm-hmm".into(),
                start_ms: 7500.0,
                end_ms: 8000.0,
            }],
        };
        let bot = audio(4000, 8500);
        let j = judge(&script, &bot, &[], 6_000 * MS);
        assert_eq!(j.overlaps[0].outcome, OverlapOutcome::Kept);
        let mut bot = audio(4000, 7800);
        bot.extend(audio(8800, 10_000));
        let j = judge(&script, &bot, &[7790 * MS], 6_000 * MS);
        assert_eq!(j.overlaps[0].outcome, OverlapOutcome::Cut);
        assert!(j.overlaps[0].spoke_again);
        let j = judge(&script, &audio(4000, 6000), &[], 6_000 * MS);
        assert_eq!(j.overlaps[0].outcome, OverlapOutcome::NotOverBot);
    }
}
