//! Beam search over Whisper's decoder, as a sans-IO core: the model is a
//! [`DecoderStep`] the search calls, so the search is tested with a scripted
//! fake and the real decoder lives in [`super::model`].
//!
//! The rules are OpenAI Whisper's for transcription without timestamps
//! (`decoding.py`): suppress the configured tokens and every timestamp token
//! at each step, and a blank or end of text as the first sampled token; keep
//! `beam` live hypotheses, expanding each by its `beam + 1` best tokens; a
//! hypothesis that ends with end of text is finished if it ranks among the
//! `beam` best candidates; stop when `beam` are finished or at `max_tokens`;
//! pick the finished one with the best log-probability per token.
//!
//! [`confirmed_draft`] checks a draft (the tokens of an earlier transcript of
//! the start of the same speech) against the model in one decoder step: the
//! tokens the model itself would pick with confidence are kept, so the search
//! only decodes what comes after them.

/// What the search needs from the decoder.
pub(crate) trait DecoderStep {
    /// The model's error.
    type Error;

    /// Feeds `n` new tokens to each of `from.len()` rows (`tokens` holds them
    /// row after row); row `r` continues the cache of row `from[r]` of the
    /// previous call (the first call has one row and no cache). Returns the
    /// logits after each new token, row after row (`n` times the vocabulary's
    /// size per row).
    fn step(&mut self, tokens: &[u32], n: usize, from: &[usize]) -> Result<&[f32], Self::Error>;
}

/// The token rules of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchRules {
    /// End of text.
    pub(crate) eot: u32,
    /// The first timestamp token; it and every later id are suppressed.
    pub(crate) timestamp_begin: u32,
    /// Never sampled.
    pub(crate) suppress: Vec<u32>,
    /// Not sampled as the first token (a blank, end of text).
    pub(crate) suppress_at_begin: Vec<u32>,
}

/// One finished or live hypothesis.
#[derive(Debug, Clone)]
struct Hypothesis {
    tokens: Vec<u32>,
    log_prob: f64,
}

/// A candidate continuation: (score, parent row, token).
type Candidate = (f64, usize, u32);

/// Runs the search from `prompt` (start tokens, then any forced prefix);
/// `sample_begin` says whether the first sampled token is the first of the
/// transcript (the begin-suppression applies). Returns the sampled tokens,
/// without end of text.
pub(crate) fn beam_search<D: DecoderStep>(
    decoder: &mut D,
    prompt: &[u32],
    rules: &SearchRules,
    beam: usize,
    max_tokens: usize,
    sample_begin: bool,
) -> Result<Vec<u32>, D::Error> {
    let beam = beam.max(1);
    let mut live = vec![Hypothesis {
        tokens: Vec::new(),
        log_prob: 0.0,
    }];
    let mut finished: Vec<Hypothesis> = Vec::new();
    let mut feed: Vec<u32> = prompt.to_vec();
    let mut n = prompt.len();
    let mut from = vec![0usize];
    let mut log_probs = Vec::new();
    for step in 0..max_tokens.max(1) {
        let logits = decoder.step(&feed, n, &from)?;
        let vocab = logits.len() / (live.len() * n);
        log_probs.resize(vocab, 0.0);
        let mut candidates: Vec<Candidate> = Vec::with_capacity(live.len() * (beam + 1));
        for (row, hypothesis) in live.iter().enumerate() {
            // The logits after the row's last new token.
            let at = (row * n + n - 1) * vocab;
            let row_logits = &logits[at..at + vocab];
            log_softmax(row_logits, rules, step == 0 && sample_begin, &mut log_probs);
            for (token, lp) in top_k(&log_probs, beam + 1) {
                candidates.push((hypothesis.log_prob + lp, row, token));
            }
        }
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut next = Vec::with_capacity(beam);
        feed.clear();
        from.clear();
        for (score, row, token) in candidates {
            if next.len() == beam {
                break;
            }
            let mut tokens = live[row].tokens.clone();
            if token == rules.eot {
                finished.push(Hypothesis {
                    tokens,
                    log_prob: score,
                });
                continue;
            }
            tokens.push(token);
            next.push(Hypothesis {
                tokens,
                log_prob: score,
            });
            feed.push(token);
            from.push(row);
        }
        if finished.len() >= beam || next.is_empty() {
            break;
        }
        live = next;
        n = 1;
    }
    if finished.is_empty() {
        finished = live;
    }
    Ok(best(finished).map(|h| h.tokens).unwrap_or_default())
}

/// How many leading tokens of `draft` the model confirms after `prompt`: each
/// is the model's most likely next token under the rules (the begin rule at
/// the first when `sample_begin`) with a probability of at least `min_prob`.
/// One decoder step over the prompt and the whole draft.
pub(crate) fn confirmed_draft<D: DecoderStep>(
    decoder: &mut D,
    prompt: &[u32],
    draft: &[u32],
    rules: &SearchRules,
    min_prob: f64,
    sample_begin: bool,
) -> Result<usize, D::Error> {
    if draft.is_empty() {
        return Ok(0);
    }
    let mut feed = prompt.to_vec();
    feed.extend_from_slice(draft);
    let n = feed.len();
    let logits = decoder.step(&feed, n, &[0])?;
    let vocab = logits.len() / n;
    let mut log_probs = vec![0f64; vocab];
    let mut confirmed = 0;
    for (i, &token) in draft.iter().enumerate() {
        // The logits after the token before draft[i].
        let at = (prompt.len() + i - 1) * vocab;
        log_softmax(
            &logits[at..at + vocab],
            rules,
            i == 0 && sample_begin,
            &mut log_probs,
        );
        let best = top_k(&log_probs, 1);
        match best.first() {
            Some(&(t, lp)) if t == token && lp.exp() >= min_prob => confirmed += 1,
            _ => break,
        }
    }
    Ok(confirmed)
}

/// The hypothesis with the best log-probability per token (end of text counted).
fn best(hypotheses: Vec<Hypothesis>) -> Option<Hypothesis> {
    let per_token = |h: &Hypothesis| h.log_prob / (h.tokens.len() + 1) as f64;
    hypotheses
        .into_iter()
        .reduce(|a, b| if per_token(&b) > per_token(&a) { b } else { a })
}

/// Log-softmax of `logits` with the suppressed tokens at minus infinity.
fn log_softmax(logits: &[f32], rules: &SearchRules, begin: bool, out: &mut [f64]) {
    for (o, &l) in out.iter_mut().zip(logits) {
        *o = f64::from(l);
    }
    let ts = (rules.timestamp_begin as usize).min(out.len());
    out[ts..].fill(f64::NEG_INFINITY);
    let suppressed = rules.suppress.iter().chain(if begin {
        &rules.suppress_at_begin[..]
    } else {
        &[]
    });
    for &t in suppressed {
        if let Some(o) = out.get_mut(t as usize) {
            *o = f64::NEG_INFINITY;
        }
    }
    let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = out.iter().map(|&v| (v - max).exp()).sum();
    let log_sum = max + sum.ln();
    for o in out.iter_mut() {
        *o -= log_sum;
    }
}

/// The `k` best (token, log-probability) pairs, best first, ties to the lower id.
fn top_k(log_probs: &[f64], k: usize) -> Vec<(u32, f64)> {
    let mut best: Vec<(u32, f64)> = Vec::with_capacity(k + 1);
    for (i, &lp) in log_probs.iter().enumerate() {
        if lp == f64::NEG_INFINITY || best.len() == k && lp <= best[k - 1].1 {
            continue;
        }
        let at = best.partition_point(|&(_, b)| b >= lp);
        best.insert(at, (i as u32, lp));
        best.truncate(k);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder whose next-token scores depend only on the row's last token.
    struct Scripted {
        vocab: usize,
        /// (previous token, next token, logit); every other logit is -10.
        table: Vec<(u32, u32, f32)>,
        rows: Vec<Vec<u32>>,
        out: Vec<f32>,
        calls: Vec<(Vec<u32>, usize, Vec<usize>)>,
    }

    impl Scripted {
        fn new(vocab: usize, table: Vec<(u32, u32, f32)>) -> Self {
            Scripted {
                vocab,
                table,
                rows: Vec::new(),
                out: Vec::new(),
                calls: Vec::new(),
            }
        }
    }

    impl DecoderStep for Scripted {
        type Error = ();

        fn step(&mut self, tokens: &[u32], n: usize, from: &[usize]) -> Result<&[f32], ()> {
            self.calls.push((tokens.to_vec(), n, from.to_vec()));
            let old = std::mem::take(&mut self.rows);
            self.rows = from
                .iter()
                .enumerate()
                .map(|(r, &f)| {
                    let mut row = old.get(f).cloned().unwrap_or_default();
                    row.extend_from_slice(&tokens[r * n..(r + 1) * n]);
                    row
                })
                .collect();
            self.out = vec![-10.0; self.rows.len() * n * self.vocab];
            for (r, row) in self.rows.iter().enumerate() {
                for i in 0..n {
                    // The logits after the i-th new token of the row.
                    let prev = row[row.len() - n + i];
                    let at = (r * n + i) * self.vocab;
                    for &(from_token, next, logit) in &self.table {
                        if from_token == prev {
                            self.out[at + next as usize] = logit;
                        }
                    }
                }
            }
            Ok(&self.out)
        }
    }

    fn rules() -> SearchRules {
        SearchRules {
            eot: 1,
            timestamp_begin: 9,
            suppress: vec![2],
            suppress_at_begin: vec![3, 1],
        }
    }

    #[test]
    fn greedy_follows_the_best_token_until_end_of_text_and_never_samples_suppressed_ones() {
        // prompt 0 -> 2 (suppressed) or 3 (suppressed at begin) or 4; 4 -> 5 -> eot.
        let table = vec![
            (0, 2, 9.0),
            (0, 3, 8.0),
            (0, 4, 1.0),
            (4, 5, 5.0),
            (5, 1, 5.0),
            (5, 9, 9.0), // a timestamp: suppressed
        ];
        let mut d = Scripted::new(10, table);
        let out = beam_search(&mut d, &[0], &rules(), 1, 10, true).unwrap();
        assert_eq!(out, vec![4, 5]);
        assert_eq!(d.calls[0], (vec![0], 1, vec![0]));
        assert_eq!(d.calls[1], (vec![4], 1, vec![0]));
    }

    #[test]
    fn beam_search_finds_a_sequence_greedy_misses() {
        // From 0: 4 looks best (logit 3) but leads to a poor continuation; 5 (2.9)
        // leads to a certain one.
        let mut table = vec![(0, 4, 3.0), (0, 5, 2.9)];
        for t in 0..8 {
            table.push((4, t, 0.0)); // flat: every token ~equally likely
        }
        table.push((5, 6, 8.0));
        table.push((6, 1, 8.0));
        table.push((4, 1, 0.5));
        let mut greedy = Scripted::new(10, table.clone());
        let g = beam_search(&mut greedy, &[0], &rules(), 1, 10, true).unwrap();
        assert_eq!(g[0], 4);
        let mut beam = Scripted::new(10, table);
        let b = beam_search(&mut beam, &[0], &rules(), 3, 10, true).unwrap();
        assert_eq!(b, vec![5, 6]);
        // Rows continue their parents' caches.
        let (_, n, from) = &beam.calls[1];
        assert_eq!(*n, 1);
        assert!(from.iter().all(|&f| f == 0), "{from:?}");
    }

    #[test]
    fn a_forced_prefix_is_fed_with_the_prompt_and_the_begin_rule_is_skipped() {
        // After the prefix token 3, eot is allowed at once.
        let table = vec![(3, 1, 5.0)];
        let mut d = Scripted::new(10, table);
        let out = beam_search(&mut d, &[0, 3], &rules(), 2, 10, false).unwrap();
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(d.calls[0].0, vec![0, 3]);
        assert_eq!(d.calls[0].1, 2);
    }

    #[test]
    fn the_search_stops_at_max_tokens_and_keeps_the_best_live_hypothesis() {
        let table = vec![(0, 4, 5.0), (4, 4, 5.0)];
        let mut d = Scripted::new(10, table);
        let out = beam_search(&mut d, &[0], &rules(), 2, 3, true).unwrap();
        assert_eq!(out, vec![4, 4, 4]);
        assert_eq!(d.calls.len(), 3);
    }

    #[test]
    fn a_draft_is_confirmed_up_to_the_first_token_the_model_would_not_pick_surely() {
        // 0 -> 4 (sure), 4 -> 5 (sure), 5 -> 6 or 7 (a toss-up), 6 -> eot.
        let table = vec![
            (0, 4, 9.0),
            (4, 5, 9.0),
            (5, 6, 2.0),
            (5, 7, 2.0),
            (6, 1, 9.0),
        ];
        let rules = rules();
        let confirmed = |draft: &[u32]| {
            let mut d = Scripted::new(10, table.clone());
            let k = confirmed_draft(&mut d, &[0], draft, &rules, 0.6, true).unwrap();
            assert_eq!(d.calls.len(), 1, "one decoder step");
            assert_eq!(d.calls[0].1, 1 + draft.len());
            k
        };
        assert_eq!(confirmed(&[4, 5, 6]), 2, "6 is only a 50 % pick");
        assert_eq!(confirmed(&[4, 8]), 1, "8 is not the model's pick");
        assert_eq!(confirmed(&[5]), 0);
        let mut d = Scripted::new(10, table);
        assert_eq!(
            confirmed_draft(&mut d, &[0], &[], &rules, 0.6, true).unwrap(),
            0
        );
        assert!(d.calls.is_empty(), "no draft, no step");
    }

    #[test]
    fn top_k_is_sorted_and_ignores_suppressed_tokens() {
        let lp = [-1.0, f64::NEG_INFINITY, -0.5, -3.0, -0.5];
        assert_eq!(top_k(&lp, 3), vec![(2, -0.5), (4, -0.5), (0, -1.0)]);
        assert_eq!(top_k(&lp, 10).len(), 4);
    }
}
