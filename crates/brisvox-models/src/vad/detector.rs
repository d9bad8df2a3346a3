//! The VAD stop rule: speech start, speech end and the early "falling" hint from one
//! Silero probability per window. Sans-IO: no clock, no I/O, no allocation.
//!
//! # Driving it
//!
//! Feed every scored window, in order, with [`VadDetector::handle_window`]: the
//! window's **end as a sample offset** since the stream started (window `seq` ends at
//! `(seq + 1) * window_samples`) and its probability. It returns at most one
//! [`VadEvent`]. Times in events are audio time since the stream started, computed
//! exactly from sample offsets (32 ms windows are exact at 8 and 16 kHz), so
//! comparisons such as "at least 96 ms" never flip on clock jitter.
//!
//! # Rules
//!
//! A window is **speech** when `p >= positive_threshold` (0.5), **silence** when
//! `p < negative_threshold` (0.35), and in the **band** otherwise.
//!
//! - **Start.** A run of consecutive speech windows starts speech at the first
//!   window whose end is at least `min_speech` after the run's first sample; any
//!   non-speech window (band included) before that drops the run.
//!   `SpeechStart { at }` is the run's first sample minus `speech_pad` (not before 0);
//!   `decided_at` is the confirming window's end.
//! - **Stop.** While speaking, a speech window sets the *last speech end* (its end).
//!   The stop is confirmed by the first **silence** window whose end is at least
//!   `min_silence` after the last speech end. Band windows neither cancel the
//!   pending stop nor restart its silence, and cannot confirm it; a speech window
//!   cancels it. `SpeechEnd { speech_end_at }` is backdated to the last speech end
//!   plus `speech_pad` (never after `decided_at`, the confirming window's end).
//! - **Window rounding.** Because the rule is "at least `min_silence`" on exact
//!   window ends, the hangover is `ceil(min_silence / 32 ms)` windows: the default
//!   100 ms is 4 windows (128 ms), as measured for brisvox in the spec's "Why 4
//!   windows against 3" (Pipecat rounds `0.1 / 0.032` to the nearest, 3 windows =
//!   96 ms). Set `min_silence` to 90 or 96 ms for 3 windows; with sample-exact times
//!   96 ms is exactly 3 windows, it does not flip.
//! - **Falling hint** (early analysis; off unless `fall_delay` is set). While a
//!   stop is pending, the first silence window whose end is at least `fall_delay`
//!   rounded up to whole windows after the last speech end emits
//!   `Falling { at }`, once per fall, where `at` is the time the stop will carry if
//!   this fall is confirmed (last speech end + `speech_pad`; it may lie ahead of the
//!   hint's own window). A speech window ends the fall; the next fall may hint
//!   again. Hints are only sent when [`VadParams::falling_hint_possible`] holds:
//!   otherwise the stop would be confirmed by the very window that would hint, or
//!   (pad longer than `min_silence`) the stop's time would depend on the confirming
//!   window, so the hint could not carry it.

use std::time::Duration;

use super::silero::SileroRate;

/// Audio time of one Silero window (both rates).
pub const WINDOW: Duration = Duration::from_millis(32);

/// Parameters of the stop rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadParams {
    /// A window with `p >=` this is speech.
    pub positive_threshold: f32,
    /// A window with `p <` this is silence (between the two: band).
    pub negative_threshold: f32,
    /// Speech must last at least this long before it starts.
    pub min_speech: Duration,
    /// Silence after the last speech window that confirms the stop.
    pub min_silence: Duration,
    /// Added before a start and after a stop's speech end.
    pub speech_pad: Duration,
    /// Emit [`VadEvent::Falling`] once a fall has lasted this long (rounded up to
    /// whole windows); `None` sends no hints.
    pub fall_delay: Option<Duration>,
}

impl Default for VadParams {
    /// 0.5 / 0.35, `min_speech` 64 ms (two windows: a lone click or breath does not
    /// start speech), `min_silence` 100 ms (4 windows), `speech_pad` 30 ms (Silero's
    /// own default), no falling hint.
    fn default() -> Self {
        VadParams {
            positive_threshold: 0.5,
            negative_threshold: 0.35,
            min_speech: Duration::from_millis(64),
            min_silence: Duration::from_millis(100),
            speech_pad: Duration::from_millis(30),
            fall_delay: None,
        }
    }
}

/// Why the falling hint can never be sent with some parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FallingHintImpossible {
    /// No `fall_delay` is set.
    #[error("no fall_delay is set")]
    Disabled,
    /// The rounded fall delay is not below `min_silence`: the stop is confirmed by
    /// the window that would hint.
    #[error(
        "fall_delay rounded up to whole windows ({rounded:?}) is not below min_silence ({min_silence:?})"
    )]
    DelayNotBelowMinSilence {
        /// `fall_delay` rounded up to whole 32 ms windows.
        rounded: Duration,
        /// The configured `min_silence`.
        min_silence: Duration,
    },
    /// `speech_pad` exceeds `min_silence`: the stop's time would depend on the
    /// confirming window, which the hint cannot know.
    #[error("speech_pad ({speech_pad:?}) is longer than min_silence ({min_silence:?})")]
    PadLongerThanMinSilence {
        /// The configured `speech_pad`.
        speech_pad: Duration,
        /// The configured `min_silence`.
        min_silence: Duration,
    },
}

impl VadParams {
    /// `fall_delay` rounded up to whole 32 ms windows.
    pub fn fall_delay_rounded(&self) -> Option<Duration> {
        self.fall_delay.map(whole_windows)
    }

    /// The stop's hangover: `min_silence` rounded up to whole 32 ms windows, how
    /// long after the end of its last speech window a stop is confirmed. Until
    /// then, speech that has ended still counts as going on.
    pub fn stop_hangover(&self) -> Duration {
        whole_windows(self.min_silence)
    }

    /// Whether [`VadEvent::Falling`] can ever be sent, and if not, why.
    pub fn check_falling_hint(&self) -> Result<(), FallingHintImpossible> {
        let rounded = self
            .fall_delay_rounded()
            .ok_or(FallingHintImpossible::Disabled)?;
        if rounded >= self.min_silence {
            return Err(FallingHintImpossible::DelayNotBelowMinSilence {
                rounded,
                min_silence: self.min_silence,
            });
        }
        if self.speech_pad > self.min_silence {
            return Err(FallingHintImpossible::PadLongerThanMinSilence {
                speech_pad: self.speech_pad,
                min_silence: self.min_silence,
            });
        }
        Ok(())
    }

    /// Whether [`VadEvent::Falling`] can ever be sent: `fall_delay` is set, rounded
    /// up to whole windows it is below `min_silence`, and `speech_pad <= min_silence`.
    pub fn falling_hint_possible(&self) -> bool {
        self.check_falling_hint().is_ok()
    }
}

/// `d` rounded up to whole [`WINDOW`]s.
fn whole_windows(d: Duration) -> Duration {
    let windows = d.as_nanos().div_ceil(WINDOW.as_nanos());
    // Whole windows of a Duration fit in u32 for any sane delay; saturate.
    WINDOW * u32::try_from(windows).unwrap_or(u32::MAX)
}

/// What the detector decided at a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VadEvent {
    /// Speech started.
    SpeechStart {
        /// Onset: the first sample of the confirming run, minus `speech_pad`.
        at: Duration,
        /// End of the window that confirmed the start.
        decided_at: Duration,
    },
    /// Speech stopped (the VAD stop).
    SpeechEnd {
        /// End of the last speech window plus `speech_pad` (UserSpeechEnd).
        speech_end_at: Duration,
        /// End of the window that confirmed the stop.
        decided_at: Duration,
    },
    /// The probability has stayed down for `fall_delay`: a stop is likely.
    Falling {
        /// The `speech_end_at` the stop will carry if this fall is confirmed.
        at: Duration,
        /// End of the window that sent the hint.
        decided_at: Duration,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Silent,
    /// A run of speech windows that has not lasted `min_speech` yet.
    Starting {
        run_start: u64,
    },
    Speaking {
        last_speech_end: u64,
        hinted: bool,
    },
}

/// Counters of one detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VadDetectorStats {
    /// Windows handled.
    pub windows: u64,
    /// Speech starts.
    pub starts: u64,
    /// Speech ends.
    pub stops: u64,
    /// Falling hints.
    pub falls: u64,
}

/// The stop rule for one stream; see the module docs.
#[derive(Debug, Clone)]
pub struct VadDetector {
    params: VadParams,
    rate_hz: u64,
    window_samples: u64,
    min_speech: u64,
    min_silence: u64,
    pad: u64,
    /// Rounded fall delay in samples, when hints are possible.
    fall_delay: Option<u64>,
    phase: Phase,
    stats: VadDetectorStats,
}

impl VadDetector {
    /// A detector for a stream at `rate`, silent.
    pub fn new(params: VadParams, rate: SileroRate) -> Self {
        let rate_hz = u64::from(rate.hz());
        let samples = |d: Duration| -> u64 {
            let s = (d.as_nanos() * u128::from(rate_hz)).div_ceil(1_000_000_000);
            u64::try_from(s).unwrap_or(u64::MAX)
        };
        let fall_delay = if params.falling_hint_possible() {
            params.fall_delay_rounded().map(samples)
        } else {
            None
        };
        VadDetector {
            params,
            rate_hz,
            window_samples: rate.window_samples() as u64,
            min_speech: samples(params.min_speech),
            min_silence: samples(params.min_silence),
            pad: samples(params.speech_pad),
            fall_delay,
            phase: Phase::Silent,
            stats: VadDetectorStats::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &VadParams {
        &self.params
    }

    /// Whether speech has started and not stopped.
    pub fn is_speaking(&self) -> bool {
        matches!(self.phase, Phase::Speaking { .. })
    }

    /// Counters so far.
    pub fn stats(&self) -> VadDetectorStats {
        self.stats
    }

    /// Back to silence (counters kept).
    pub fn reset(&mut self) {
        self.phase = Phase::Silent;
    }

    /// Audio time of a sample offset.
    pub fn time_of(&self, samples: u64) -> Duration {
        let nanos = u128::from(samples) * 1_000_000_000 / u128::from(self.rate_hz);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Handles one window: `window_end` is the sample offset of its end since the
    /// stream started, `probability` its Silero probability.
    pub fn handle_window(&mut self, window_end: u64, probability: f32) -> Option<VadEvent> {
        self.stats.windows += 1;
        let speech = probability >= self.params.positive_threshold;
        let silence = probability < self.params.negative_threshold;
        match self.phase {
            Phase::Silent | Phase::Starting { .. } if !speech => {
                self.phase = Phase::Silent;
                None
            }
            Phase::Silent => {
                let run_start = window_end.saturating_sub(self.window_samples);
                self.phase = Phase::Starting { run_start };
                self.confirm_start(run_start, window_end)
            }
            Phase::Starting { run_start } => self.confirm_start(run_start, window_end),
            Phase::Speaking { .. } if speech => {
                self.phase = Phase::Speaking {
                    last_speech_end: window_end,
                    hinted: false,
                };
                None
            }
            Phase::Speaking { .. } if !silence => None,
            Phase::Speaking {
                last_speech_end,
                hinted,
            } => self.silent_while_speaking(last_speech_end, hinted, window_end),
        }
    }

    /// Handles window number `seq` of the stream (0-based, as
    /// [`WindowOutcome::seq`](super::service::WindowOutcome::seq) counts): the same as
    /// [`handle_window`](Self::handle_window) with its end at
    /// `(seq + 1) * window_samples`.
    pub fn handle_seq(&mut self, seq: u64, probability: f32) -> Option<VadEvent> {
        self.handle_window((seq + 1) * self.window_samples, probability)
    }

    fn confirm_start(&mut self, run_start: u64, window_end: u64) -> Option<VadEvent> {
        if window_end.saturating_sub(run_start) < self.min_speech {
            return None;
        }
        self.phase = Phase::Speaking {
            last_speech_end: window_end,
            hinted: false,
        };
        self.stats.starts += 1;
        Some(VadEvent::SpeechStart {
            at: self.time_of(run_start.saturating_sub(self.pad)),
            decided_at: self.time_of(window_end),
        })
    }

    fn silent_while_speaking(
        &mut self,
        last_speech_end: u64,
        hinted: bool,
        window_end: u64,
    ) -> Option<VadEvent> {
        let silent_for = window_end.saturating_sub(last_speech_end);
        let speech_end = (last_speech_end + self.pad).min(window_end);
        if silent_for >= self.min_silence {
            self.phase = Phase::Silent;
            self.stats.stops += 1;
            return Some(VadEvent::SpeechEnd {
                speech_end_at: self.time_of(speech_end),
                decided_at: self.time_of(window_end),
            });
        }
        let due = self.fall_delay.is_some_and(|d| silent_for >= d);
        if hinted || !due {
            return None;
        }
        self.phase = Phase::Speaking {
            last_speech_end,
            hinted: true,
        };
        self.stats.falls += 1;
        Some(VadEvent::Falling {
            // Hints are only enabled when speech_pad <= min_silence, so this is the
            // stop's speech_end_at even if the pad reaches past this window.
            at: self.time_of(last_speech_end + self.pad),
            decided_at: self.time_of(window_end),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: f32 = 0.9; // speech
    const Q: f32 = 0.05; // silence
    const B: f32 = 0.4; // band

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Feeds probabilities as consecutive windows from the stream start; returns
    /// (window index, event) pairs.
    fn run(params: VadParams, rate: SileroRate, probs: &[f32]) -> Vec<(usize, VadEvent)> {
        let mut d = VadDetector::new(params, rate);
        let n = rate.window_samples() as u64;
        probs
            .iter()
            .enumerate()
            .filter_map(|(i, &p)| d.handle_window((i as u64 + 1) * n, p).map(|e| (i, e)))
            .collect()
    }

    fn no_pad() -> VadParams {
        VadParams {
            speech_pad: Duration::ZERO,
            ..VadParams::default()
        }
    }

    #[test]
    fn silence_and_band_alone_never_start_speech() {
        let events = run(
            VadParams::default(),
            SileroRate::Hz16000,
            &[Q, B, Q, B, B, Q],
        );
        assert!(events.is_empty());
    }

    #[test]
    fn a_start_needs_min_speech_of_consecutive_speech_windows() {
        // One speech window (32 ms < 64 ms) then silence: nothing.
        assert!(run(no_pad(), SileroRate::Hz16000, &[Q, S, Q, Q]).is_empty());
        // Two: starts at the second, dated at the run's first sample.
        let events = run(no_pad(), SileroRate::Hz16000, &[Q, S, S, S]);
        assert_eq!(
            events,
            vec![(
                2,
                VadEvent::SpeechStart {
                    at: ms(32),
                    decided_at: ms(96)
                }
            )]
        );
    }

    #[test]
    fn a_band_window_drops_a_pending_start() {
        let p = VadParams {
            min_speech: ms(96),
            ..no_pad()
        };
        // S S B S S S: the first run is dropped by the band; the second needs 3 windows.
        let events = run(p, SileroRate::Hz16000, &[S, S, B, S, S, S]);
        assert_eq!(
            events,
            vec![(
                5,
                VadEvent::SpeechStart {
                    at: ms(96),
                    decided_at: ms(192)
                }
            )]
        );
    }

    #[test]
    fn the_start_is_padded_but_not_before_zero() {
        let p = VadParams {
            speech_pad: ms(30),
            ..VadParams::default()
        };
        let events = run(p, SileroRate::Hz16000, &[S, S, Q, Q, Q, Q, Q, S, S]);
        assert_eq!(
            events[0].1,
            VadEvent::SpeechStart {
                at: Duration::ZERO,
                decided_at: ms(64)
            }
        );
        // Second start: run starts at 7 * 32 = 224 ms, minus 30 ms.
        assert_eq!(
            events[2].1,
            VadEvent::SpeechStart {
                at: ms(194),
                decided_at: ms(288)
            }
        );
    }

    #[test]
    fn min_silence_100_ms_stops_after_four_silent_windows_not_three() {
        let events = run(no_pad(), SileroRate::Hz16000, &[S, S, S, Q, Q, Q, Q, Q]);
        // Last speech window ends at 96 ms; 3 silent windows = 96 ms < 100; 4 = 128.
        assert_eq!(
            events[1],
            (
                6,
                VadEvent::SpeechEnd {
                    speech_end_at: ms(96),
                    decided_at: ms(224)
                }
            )
        );
    }

    #[test]
    fn the_hangover_is_min_silence_rounded_up_to_whole_windows() {
        for min_silence_ms in (1..=320).step_by(1) {
            let p = VadParams {
                min_silence: ms(min_silence_ms),
                ..no_pad()
            };
            let mut probs = vec![S, S];
            probs.extend(std::iter::repeat_n(Q, 12));
            let events = run(p, SileroRate::Hz16000, &probs);
            let expected_windows = min_silence_ms.div_ceil(32) as usize;
            assert_eq!(
                events[1].0,
                1 + expected_windows,
                "min_silence {min_silence_ms} ms"
            );
            let Some((_, VadEvent::SpeechEnd { decided_at, .. })) = events.get(1) else {
                panic!("no stop: {events:?}");
            };
            assert_eq!(
                *decided_at - ms(64),
                p.stop_hangover(),
                "stop_hangover() is the detector's own, min_silence {min_silence_ms} ms"
            );
        }
        // 96 ms is exactly 3 windows (sample-exact, no flip); 90 ms too.
        for (m, w) in [(90, 3), (96, 3), (97, 4), (100, 4), (128, 4), (129, 5)] {
            let p = VadParams {
                min_silence: ms(m),
                ..no_pad()
            };
            let events = run(p, SileroRate::Hz16000, &[S, S, Q, Q, Q, Q, Q, Q]);
            assert_eq!(events[1].0, 1 + w, "{m} ms");
        }
    }

    #[test]
    fn the_stop_is_backdated_to_the_last_speech_window_plus_the_pad() {
        let p = VadParams {
            speech_pad: ms(30),
            ..VadParams::default()
        };
        let events = run(p, SileroRate::Hz16000, &[S, S, S, S, Q, Q, Q, Q]);
        assert_eq!(
            events[1].1,
            VadEvent::SpeechEnd {
                speech_end_at: ms(128 + 30),
                decided_at: ms(256)
            }
        );
    }

    #[test]
    fn a_pad_longer_than_the_silence_is_clamped_to_the_deciding_window() {
        let p = VadParams {
            speech_pad: ms(200),
            ..VadParams::default()
        };
        let events = run(p, SileroRate::Hz16000, &[S, S, Q, Q, Q, Q]);
        assert_eq!(
            events[1].1,
            VadEvent::SpeechEnd {
                speech_end_at: ms(192),
                decided_at: ms(192)
            }
        );
    }

    #[test]
    fn a_speech_window_cancels_a_pending_stop_and_restarts_its_silence() {
        let events = run(
            no_pad(),
            SileroRate::Hz16000,
            &[S, S, Q, Q, Q, S, Q, Q, Q, Q],
        );
        assert_eq!(events.len(), 2);
        // Last speech window is #5 (ends 192 ms); stop at 192 + 128 = 320 ms.
        assert_eq!(
            events[1],
            (
                9,
                VadEvent::SpeechEnd {
                    speech_end_at: ms(192),
                    decided_at: ms(320)
                }
            )
        );
    }

    #[test]
    fn band_windows_neither_cancel_nor_restart_the_silence_and_cannot_confirm() {
        // S S Q B B Q: the band windows count as time since the last speech; the
        // silent window at 192 ms (128 ms after 64) confirms.
        let events = run(no_pad(), SileroRate::Hz16000, &[S, S, Q, B, B, Q]);
        assert_eq!(
            events[1],
            (
                5,
                VadEvent::SpeechEnd {
                    speech_end_at: ms(64),
                    decided_at: ms(192)
                }
            )
        );
        // S S B B B B B Q: no silent window until #7, which confirms at once.
        let events = run(no_pad(), SileroRate::Hz16000, &[S, S, B, B, B, B, B, Q]);
        assert_eq!(
            events[1],
            (
                7,
                VadEvent::SpeechEnd {
                    speech_end_at: ms(64),
                    decided_at: ms(256)
                }
            )
        );
    }

    #[test]
    fn the_same_rule_holds_at_8_khz_with_256_sample_windows() {
        let p = VadParams {
            speech_pad: ms(30),
            ..VadParams::default()
        };
        let a = run(p, SileroRate::Hz8000, &[Q, S, S, S, Q, Q, Q, Q, Q]);
        let b = run(p, SileroRate::Hz16000, &[Q, S, S, S, Q, Q, Q, Q, Q]);
        assert_eq!(a, b);
        assert_eq!(
            a[1].1,
            VadEvent::SpeechEnd {
                speech_end_at: ms(128 + 30),
                decided_at: ms(256)
            }
        );
    }

    fn hinting(fall_delay_ms: u64) -> VadParams {
        VadParams {
            fall_delay: Some(ms(fall_delay_ms)),
            speech_pad: ms(30),
            ..VadParams::default()
        }
    }

    #[test]
    fn the_falling_hint_carries_the_time_the_stop_will_carry() {
        let events = run(hinting(64), SileroRate::Hz16000, &[S, S, Q, Q, Q, Q]);
        let speech_end_at = ms(64 + 30);
        assert_eq!(
            events[1..],
            [
                (
                    3,
                    VadEvent::Falling {
                        at: speech_end_at,
                        decided_at: ms(128)
                    }
                ),
                (
                    5,
                    VadEvent::SpeechEnd {
                        speech_end_at,
                        decided_at: ms(192)
                    }
                )
            ]
        );
    }

    #[test]
    fn fall_delay_is_rounded_up_to_whole_windows() {
        // 40 ms -> 2 windows, 64 -> 2, 65 -> 3, 96 -> 3, 0 -> the first silent window.
        for (delay, window) in [(0, 2), (40, 3), (64, 3), (65, 4), (96, 4)] {
            let events = run(hinting(delay), SileroRate::Hz16000, &[S, S, Q, Q, Q, Q]);
            assert!(
                matches!(events[1], (w, VadEvent::Falling { .. }) if w == window),
                "{delay} ms: {events:?}"
            );
        }
    }

    #[test]
    fn a_hint_that_would_coincide_with_the_stop_is_never_sent() {
        // 100 ms rounds to 128 ms, not below min_silence 100: the stop's own window.
        let p = hinting(100);
        assert!(!p.falling_hint_possible());
        assert_eq!(
            p.check_falling_hint(),
            Err(FallingHintImpossible::DelayNotBelowMinSilence {
                rounded: ms(128),
                min_silence: ms(100)
            })
        );
        let events = run(p, SileroRate::Hz16000, &[S, S, Q, Q, Q, Q, Q]);
        assert!(
            events
                .iter()
                .all(|(_, e)| !matches!(e, VadEvent::Falling { .. }))
        );
        // 96 ms (3 windows) is below 100 ms: possible.
        assert!(hinting(96).falling_hint_possible());
        assert!(
            !VadParams::default().falling_hint_possible(),
            "off by default"
        );
        assert_eq!(
            VadParams::default().check_falling_hint(),
            Err(FallingHintImpossible::Disabled)
        );
    }

    #[test]
    fn a_pad_longer_than_min_silence_disables_the_hint() {
        let p = VadParams {
            speech_pad: ms(101),
            ..hinting(32)
        };
        assert!(matches!(
            p.check_falling_hint(),
            Err(FallingHintImpossible::PadLongerThanMinSilence { .. })
        ));
        let events = run(p, SileroRate::Hz16000, &[S, S, Q, Q, Q, Q]);
        assert!(
            events
                .iter()
                .all(|(_, e)| !matches!(e, VadEvent::Falling { .. }))
        );
        // Pads up to min_silence keep it, for minimum silences of 100-300 ms.
        for min_silence in [100, 160, 200, 300] {
            for pad in (0..=min_silence).step_by(20) {
                let p = VadParams {
                    min_silence: ms(min_silence),
                    speech_pad: ms(pad),
                    fall_delay: Some(ms(64)),
                    ..VadParams::default()
                };
                assert!(p.falling_hint_possible(), "{pad} / {min_silence}");
                let mut probs = vec![S, S];
                probs.extend(std::iter::repeat_n(Q, 12));
                let events = run(p, SileroRate::Hz16000, &probs);
                let (VadEvent::Falling { at, .. }, VadEvent::SpeechEnd { speech_end_at, .. }) =
                    (events[1].1, events[2].1)
                else {
                    panic!("{events:?}");
                };
                assert_eq!(at, speech_end_at, "{pad} / {min_silence}");
            }
        }
    }

    #[test]
    fn one_hint_per_fall_and_a_new_fall_hints_again() {
        let probs = [S, S, Q, Q, B, S, Q, Q, Q, Q];
        let events = run(hinting(64), SileroRate::Hz16000, &probs);
        let kinds: Vec<(usize, &str)> = events
            .iter()
            .map(|(i, e)| {
                let k = match e {
                    VadEvent::SpeechStart { .. } => "start",
                    VadEvent::SpeechEnd { .. } => "end",
                    VadEvent::Falling { .. } => "fall",
                };
                (*i, k)
            })
            .collect();
        assert_eq!(
            kinds,
            vec![(1, "start"), (3, "fall"), (7, "fall"), (9, "end")]
        );
    }

    #[test]
    fn a_band_window_after_the_hint_still_reuses_the_hints_time() {
        let events = run(hinting(64), SileroRate::Hz16000, &[S, S, Q, Q, B, Q]);
        let (VadEvent::Falling { at, .. }, VadEvent::SpeechEnd { speech_end_at, .. }) =
            (events[1].1, events[2].1)
        else {
            panic!("{events:?}");
        };
        assert_eq!(at, speech_end_at);
        assert_eq!(events[2].0, 5);
    }

    #[test]
    fn handle_seq_is_handle_window_at_the_windows_end() {
        let probs = [Q, S, S, Q, Q, Q, Q, Q];
        for rate in [SileroRate::Hz8000, SileroRate::Hz16000] {
            let mut d = VadDetector::new(hinting(64), rate);
            let by_seq: Vec<_> = probs
                .iter()
                .enumerate()
                .filter_map(|(i, &p)| d.handle_seq(i as u64, p))
                .collect();
            let by_end: Vec<_> = run(hinting(64), rate, &probs)
                .into_iter()
                .map(|e| e.1)
                .collect();
            assert_eq!(by_seq, by_end);
        }
    }

    #[test]
    fn counters_and_reset() {
        let mut d = VadDetector::new(hinting(64), SileroRate::Hz16000);
        for (i, p) in [S, S, Q, Q, Q, Q].iter().enumerate() {
            d.handle_window((i as u64 + 1) * 512, *p);
        }
        assert_eq!(
            d.stats(),
            VadDetectorStats {
                windows: 6,
                starts: 1,
                stops: 1,
                falls: 1
            }
        );
        d.handle_window(7 * 512, S);
        d.handle_window(8 * 512, S);
        assert!(d.is_speaking());
        d.reset();
        assert!(!d.is_speaking());
    }
}
