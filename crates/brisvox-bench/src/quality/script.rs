//! What a fixture's caller does, read from its sidecar: the turns (with their
//! transcripts, inner pauses and whether they interrupt the bot) and the
//! overlaps (backchannels, noise) over the bot's answer; and the words of it
//! all at their times, for the mock STT's timed words.

use brisvox_providers::mock::TimedWord;

/// One turn of the caller: the bot must answer it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Turn {
    /// Onset, ms from the start of the fixture.
    pub(crate) start_ms: f64,
    /// End of speech, ms.
    pub(crate) end_ms: f64,
    /// What is said.
    pub(crate) transcript: String,
    /// Spoken over the bot's answer on purpose: it should cut the bot.
    pub(crate) barge_in: bool,
    /// Silences inside the turn, ms: (start, end).
    pub(crate) pauses: Vec<(f64, f64)>,
}

/// Caller sound over the bot that is not a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Overlap {
    /// `backchannel` or `noise`.
    pub(crate) kind: String,
    /// What is said (empty for noise).
    pub(crate) transcript: String,
    /// Onset, ms.
    pub(crate) start_ms: f64,
    /// End, ms.
    pub(crate) end_ms: f64,
}

/// The caller's side of one fixture.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Script {
    /// Turns in time order.
    pub(crate) turns: Vec<Turn>,
    /// Overlaps in time order.
    pub(crate) overlaps: Vec<Overlap>,
}

fn f64_of(v: &serde_json::Value, key: &str, what: &str) -> Result<f64, String> {
    v[key]
        .as_f64()
        .ok_or_else(|| format!("sidecar: {what} has no {key}"))
}

fn spans(v: &serde_json::Value) -> Vec<(f64, f64)> {
    v.as_array()
        .map(|list| {
            list.iter()
                .filter_map(|p| Some((p["start_ms"].as_f64()?, p["end_ms"].as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses the caller's side of a sidecar (any fixture: the quality keys are optional).
pub(crate) fn parse(text: &str) -> Result<Script, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("sidecar is not JSON: {e}"))?;
    let mut pauses_anywhere = spans(&v["pauses"]);
    pauses_anywhere.extend(
        spans(&v["inserted_pause"]).into_iter().chain(
            v["inserted_pause"]["start_ms"]
                .as_f64()
                .zip(v["inserted_pause"]["end_ms"].as_f64()),
        ),
    );
    let mut script = Script::default();
    for (i, u) in v["utterances"].as_array().into_iter().flatten().enumerate() {
        let what = format!("utterance {i}");
        let (start_ms, end_ms) = (f64_of(u, "start_ms", &what)?, f64_of(u, "end_ms", &what)?);
        let mut pauses = spans(&u["inserted_pauses"]);
        if pauses.is_empty() {
            pauses = pauses_anywhere
                .iter()
                .copied()
                .filter(|&(s, e)| s >= start_ms && e <= end_ms)
                .collect();
        }
        script.turns.push(Turn {
            start_ms,
            end_ms,
            transcript: u["transcript"].as_str().unwrap_or("").to_owned(),
            barge_in: u["barge_in"].as_bool().unwrap_or(false),
            pauses,
        });
    }
    for (i, o) in v["overlaps"].as_array().into_iter().flatten().enumerate() {
        let what = format!("overlap {i}");
        script.overlaps.push(Overlap {
            kind: o["kind"].as_str().unwrap_or("backchannel").to_owned(),
            transcript: o["transcript"].as_str().unwrap_or("").to_owned(),
            start_ms: f64_of(o, "start_ms", &what)?,
            end_ms: f64_of(o, "end_ms", &what)?,
        });
    }
    Ok(script)
}

impl Script {
    /// Every word at the time it has been spoken, in time order: the words of
    /// each turn and overlap spread evenly over its speech (pauses left out).
    /// A turn's last word gets a period when its transcript has no terminal
    /// punctuation, as a punctuating STT writes it.
    pub(crate) fn timed_words(&self) -> Vec<TimedWord> {
        let mut out = Vec::new();
        for t in &self.turns {
            let mut words: Vec<String> =
                t.transcript.split_whitespace().map(str::to_owned).collect();
            if let Some(last) = words.last_mut()
                && !last.ends_with(['.', '?', '!'])
            {
                last.push('.');
            }
            place(&mut out, &words, t.start_ms, t.end_ms, &t.pauses);
        }
        for o in &self.overlaps {
            let words: Vec<String> = o.transcript.split_whitespace().map(str::to_owned).collect();
            place(&mut out, &words, o.start_ms, o.end_ms, &[]);
        }
        out.sort_by_key(|w| w.at_ms);
        out
    }
}

/// Spreads `words` over [start, end] minus `pauses`: word k of n is spoken
/// once (k + 1) / n of the speech time has passed.
fn place(out: &mut Vec<TimedWord>, words: &[String], start: f64, end: f64, pauses: &[(f64, f64)]) {
    let mut pieces = vec![(start, end)];
    for &(ps, pe) in pauses {
        pieces = pieces
            .into_iter()
            .flat_map(|(s, e)| {
                if pe <= s || ps >= e {
                    vec![(s, e)]
                } else {
                    [(s, ps), (pe, e)]
                        .into_iter()
                        .filter(|(a, b)| b > a)
                        .collect()
                }
            })
            .collect();
    }
    let total: f64 = pieces.iter().map(|(s, e)| e - s).sum();
    let n = words.len();
    for (k, word) in words.iter().enumerate() {
        let mut left = total * (k + 1) as f64 / n as f64;
        let mut at = end;
        for &(s, e) in &pieces {
            if left <= e - s {
                at = s + left;
                break;
            }
            left -= e - s;
        }
        out.push(TimedWord {
            at_ms: at.round() as u64,
            text: word.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIDECAR: &str = r#"{
      "name": "x", "sample_rate_hz": 16000,
      "utterances": [
        {"transcript": "one two three four", "start_ms": 1000.0, "end_ms": 2400.0,
         "inserted_pauses": [{"start_ms": 1500.0, "end_ms": 1900.0}]},
        {"transcript": "Stop.", "start_ms": 6000.0, "end_ms": 6500.0, "barge_in": true}
      ],
      "overlaps": [{"kind": "backchannel", "transcript": "mm-hmm", "start_ms": 4000.0, "end_ms": 4400.0}]
    }"#;

    #[test]
    fn turns_overlaps_and_barge_ins_are_read() {
        let s = parse(SIDECAR).unwrap();
        assert_eq!(s.turns.len(), 2);
        assert!(!s.turns[0].barge_in && s.turns[1].barge_in);
        assert_eq!(s.turns[0].pauses, vec![(1500.0, 1900.0)]);
        assert_eq!(s.overlaps[0].transcript, "mm-hmm");
    }

    #[test]
    fn words_are_spread_over_the_speech_and_a_turn_ends_with_a_period() {
        let words = parse(SIDECAR).unwrap().timed_words();
        let at: Vec<(u64, &str)> = words.iter().map(|w| (w.at_ms, w.text.as_str())).collect();
        // 1000 ms of speech in two pieces (1000-1500, 1900-2400): a word per 250 ms.
        assert_eq!(
            at,
            vec![
                (1250, "one"),
                (1500, "two"),
                (2150, "three"),
                (2400, "four."),
                (4400, "mm-hmm"),
                (6500, "Stop."),
            ]
        );
    }

    #[test]
    fn a_plain_v2v_sidecar_is_a_script_without_overlaps() {
        let s = parse(
            r#"{"name":"y","sample_rate_hz":16000,"utterances":[{"transcript":"hi","start_ms":1.0,"end_ms":2.0}],
                "inserted_pause": {"start_ms": 1.2, "end_ms": 1.5}}"#,
        )
        .unwrap();
        assert_eq!(s.turns[0].pauses, vec![(1.2, 1.5)]);
        assert!(s.overlaps.is_empty());
    }
}
