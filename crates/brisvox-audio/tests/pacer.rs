//! The output pacer's rules, one behaviour per test, driven by a simulated
//! driver with no runtime: it feeds timed inputs, polls, and jumps the clock to
//! the next deadline (or input). The sink can take time to accept a push and
//! the timer can fire late. Every test also checks, through the driver, that no
//! already-due deadline ever reached the timer.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use brisvox_audio::pacer::{OutputPacer, PacerOutput, phase_offset};
use brisvox_core::{AudioFrame, Epoch};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[allow(clippy::disallowed_methods)] // One real instant as the origin of simulated time; the pacer never reads the clock.
fn origin() -> Instant {
    Instant::now()
}

/// A frame of `duration_ms` at `rate_hz` whose samples all hold `tag`.
fn tagged(tag: i16, duration_ms: u32, rate_hz: u32) -> AudioFrame {
    let n = (rate_hz * duration_ms / 1000) as usize;
    AudioFrame::from_samples(&vec![tag; n], rate_hz).expect("test frames fit")
}

fn f20(tag: i16) -> AudioFrame {
    tagged(tag, 20, 16_000)
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Test inputs; frames are inline by design.
enum Input {
    Frame(Epoch, AudioFrame),
    End(Epoch),
    Interrupt(Epoch),
}

/// What reached the sink, with times in ms since the origin.
#[derive(Debug, Clone, PartialEq)]
enum Out {
    /// A frame whose push returned: (tag, release ms, hand-off ms).
    Played(i16, f64, f64),
    /// A frame abandoned mid-push by an interrupt: (tag, release ms).
    Abandoned(i16, f64),
    /// A forwarded turn end: (epoch, ms).
    Ended(Epoch, f64),
}

type PushCost = Box<dyn FnMut(i16, Instant) -> Instant>;
type TimerLate = Box<dyn FnMut(Instant) -> Duration>;

struct Sim {
    pacer: OutputPacer,
    t0: Instant,
    now: Instant,
    inputs: VecDeque<(Instant, Input)>,
    /// A frame the full pacer handed back; the inbox is not read until a release.
    held: Option<(Epoch, AudioFrame)>,
    /// When the push of a frame returns, given its tag and the release instant.
    push_returns_at: PushCost,
    /// How late the timer fires for a deadline.
    timer_late: TimerLate,
    log: Vec<Out>,
    /// Deadlines handed to the timer.
    waits: Vec<Instant>,
}

impl Sim {
    fn new(pacer: OutputPacer) -> Self {
        let t0 = origin();
        Sim {
            pacer,
            t0,
            now: t0,
            inputs: VecDeque::new(),
            held: None,
            push_returns_at: Box::new(|_, at| at),
            timer_late: Box::new(|_| Duration::ZERO),
            log: Vec::new(),
            waits: Vec::new(),
        }
    }

    fn at(&self, t_ms: u64) -> Instant {
        self.t0 + ms(t_ms)
    }

    fn ms_of(&self, t: Instant) -> f64 {
        (t - self.t0).as_secs_f64() * 1000.0
    }

    fn input(&mut self, t_ms: u64, input: Input) {
        let t = self.at(t_ms);
        let pos = self.inputs.iter().position(|(ti, _)| *ti > t);
        self.inputs
            .insert(pos.unwrap_or(self.inputs.len()), (t, input));
    }

    /// Frames `first..first + count` of `epoch` (20 ms, 16 kHz), all arriving at `t_ms`.
    fn frames_at(&mut self, t_ms: u64, epoch: Epoch, first: i16, count: i16) {
        for tag in first..first + count {
            self.input(t_ms, Input::Frame(epoch, f20(tag)));
        }
    }

    fn deliver_due_inputs(&mut self) {
        if let Some((epoch, frame)) = self.held.take()
            && let Err(full) = self.pacer.handle_frame(self.now, epoch, frame)
        {
            self.held = Some((full.epoch, full.frame));
            return;
        }
        while self.inputs.front().is_some_and(|(t, _)| *t <= self.now) {
            let (_, input) = self.inputs.pop_front().expect("checked above");
            match input {
                Input::Frame(epoch, frame) => {
                    if let Err(full) = self.pacer.handle_frame(self.now, epoch, frame) {
                        self.held = Some((full.epoch, full.frame));
                        return;
                    }
                }
                Input::End(epoch) => self.pacer.handle_tts_end(self.now, epoch).unwrap(),
                Input::Interrupt(epoch) => self.pacer.handle_interrupt(self.now, epoch),
            }
        }
    }

    /// Pushes a released frame; an interrupt that arrives before the push
    /// returns abandons it (the driver's select on its inbox).
    fn push(&mut self, frame: &AudioFrame) {
        let tag = frame.samples().first().copied().unwrap_or(-1);
        let released = self.now;
        let returns = (self.push_returns_at)(tag, released);
        let interrupt = self.inputs.iter().find_map(|(t, i)| match i {
            Input::Interrupt(_) if *t < returns => Some(*t),
            _ => None,
        });
        match interrupt {
            Some(t) => {
                self.now = self.now.max(t);
                self.log.push(Out::Abandoned(tag, self.ms_of(released)));
            }
            None => {
                self.now = returns;
                self.pacer.handle_sent(self.now);
                self.log
                    .push(Out::Played(tag, self.ms_of(released), self.ms_of(returns)));
            }
        }
    }

    /// Polls until the pacer waits or idles; returns the deadline if it waits.
    fn poll_all(&mut self) -> Option<Instant> {
        loop {
            self.deliver_due_inputs();
            match self.pacer.poll(self.now) {
                PacerOutput::Release { frame, .. } => self.push(&frame),
                PacerOutput::TtsEnded(epoch) => {
                    self.log.push(Out::Ended(epoch, self.ms_of(self.now)))
                }
                PacerOutput::WaitUntil(deadline) => {
                    assert!(
                        deadline > self.now,
                        "a due deadline reached the timer at {} ms",
                        self.ms_of(self.now)
                    );
                    self.waits.push(deadline);
                    return Some(deadline);
                }
                PacerOutput::Idle => return None,
            }
        }
    }

    /// Runs until nothing is left to do or the clock passes `until_ms`.
    fn run(&mut self, until_ms: u64) {
        let until = self.at(until_ms);
        loop {
            let wake = self.poll_all().map(|d| d + (self.timer_late)(d));
            let next_input = if self.held.is_some() {
                None
            } else {
                self.inputs.front().map(|(t, _)| *t)
            };
            let next = match (wake, next_input) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return,
                },
            };
            if next > until {
                return;
            }
            self.now = self.now.max(next);
        }
    }

    fn played(&self) -> Vec<(i16, f64)> {
        self.log
            .iter()
            .filter_map(|o| match o {
                Out::Played(tag, at, _) => Some((*tag, *at)),
                _ => None,
            })
            .collect()
    }
}

fn assert_release_times(sim: &Sim, expected: &[(i16, f64)]) {
    let played = sim.played();
    assert_eq!(played.len(), expected.len(), "played: {played:?}");
    for ((tag, at), (etag, eat)) in played.iter().zip(expected) {
        assert_eq!(tag, etag, "order: {played:?}");
        assert!(
            (at - eat).abs() < 1e-6,
            "frame {tag} left at {at} ms, expected {eat} ms"
        );
    }
}

#[test]
fn ten_thousand_frames_stay_on_the_grid_through_a_40ms_consumer_stall() {
    let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(7));
    let count: i16 = 10_000;
    sim.frames_at(0, Epoch::ZERO, 0, count);
    // A one-slot inbox and a consumer that stalls 40 ms on frame 5000: a push
    // returns when the consumer has taken the previous frame from the slot.
    let (mut prev_taken, mut consumer_free) = (sim.t0, sim.t0);
    sim.push_returns_at = Box::new(move |tag, at| {
        let returns = at.max(prev_taken);
        let taken = returns.max(consumer_free);
        consumer_free = taken + if tag == 5000 { ms(40) } else { Duration::ZERO };
        prev_taken = taken;
        returns
    });
    sim.run(1_000_000);
    let expected: Vec<(i16, f64)> = (0..count).map(|k| (k, 7.0 + 20.0 * f64::from(k))).collect();
    assert_release_times(&sim, &expected);
    let m = sim.pacer.metrics();
    assert_eq!(
        (m.frames_played, m.underruns, m.worst_lag),
        (10_000, 0, Duration::ZERO)
    );
}

#[test]
fn input_50ms_late_releases_the_overdue_frames_at_once_and_rejoins_the_grid() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    sim.frames_at(150, Epoch::ZERO, 5, 5);
    sim.run(10_000);
    assert_release_times(
        &sim,
        &[
            (0, 0.0),
            (1, 20.0),
            (2, 40.0),
            (3, 60.0),
            (4, 80.0),
            (5, 150.0),
            (6, 150.0),
            (7, 150.0),
            (8, 160.0),
            (9, 180.0),
        ],
    );
    let m = sim.pacer.metrics();
    assert_eq!((m.underruns, m.worst_lag), (0, ms(50)));
}

#[test]
fn a_100ms_sink_stall_releases_the_late_frames_together_and_keeps_the_grid() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 12);
    sim.push_returns_at = Box::new(|tag, at| if tag == 3 { at + ms(100) } else { at });
    sim.run(10_000);
    assert_release_times(
        &sim,
        &[
            (0, 0.0),
            (1, 20.0),
            (2, 40.0),
            (3, 60.0),
            (4, 160.0),
            (5, 160.0),
            (6, 160.0),
            (7, 160.0),
            (8, 160.0),
            (9, 180.0),
            (10, 200.0),
            (11, 220.0),
        ],
    );
    let m = sim.pacer.metrics();
    assert_eq!(
        (m.frames_played, m.underruns, m.worst_lag),
        (12, 0, ms(100))
    );
}

#[test]
fn a_300ms_input_gap_counts_exactly_one_underrun_then_frames_leave_20ms_apart() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    // Frame 5's grid point is 100 ms; it arrives 300 ms after that.
    sim.frames_at(400, Epoch::ZERO, 5, 6);
    sim.run(10_000);
    assert_release_times(
        &sim,
        &[
            (0, 0.0),
            (1, 20.0),
            (2, 40.0),
            (3, 60.0),
            (4, 80.0),
            (5, 400.0),
            (6, 420.0),
            (7, 440.0),
            (8, 460.0),
            (9, 480.0),
            (10, 500.0),
        ],
    );
    let m = sim.pacer.metrics();
    assert_eq!((m.underruns, m.worst_lag), (1, Duration::ZERO));
}

#[test]
fn a_timer_that_fires_15ms_late_gives_a_worst_lag_of_exactly_15ms_and_no_underrun() {
    let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(7));
    sim.frames_at(0, Epoch::ZERO, 0, 20);
    sim.timer_late = Box::new(|_| ms(15));
    sim.run(10_000);
    let expected: Vec<(i16, f64)> = (0..20).map(|k| (k, 22.0 + 20.0 * f64::from(k))).collect();
    assert_release_times(&sim, &expected);
    let m = sim.pacer.metrics();
    assert_eq!((m.underruns, m.worst_lag), (0, ms(15)));
}

#[test]
fn waking_3ms_late_after_a_one_step_clock_jump_gives_worst_lag_3ms_and_keeps_the_grid() {
    let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(8));
    sim.frames_at(0, Epoch::ZERO, 0, 20);
    let jump_at = sim.at(2 + 20 * 10);
    sim.timer_late = Box::new(move |d| if d == jump_at { ms(3) } else { Duration::ZERO });
    sim.run(10_000);
    let expected: Vec<(i16, f64)> = (0..20)
        .map(|k| {
            (
                k,
                2.0 + 20.0 * f64::from(k) + if k == 10 { 3.0 } else { 0.0 },
            )
        })
        .collect();
    assert_release_times(&sim, &expected);
    let m = sim.pacer.metrics();
    assert_eq!((m.underruns, m.worst_lag), (0, ms(3)));
}

#[test]
fn the_first_answer_after_2s_of_idle_leaves_at_once() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(2_000, Epoch::ZERO, 0, 3);
    sim.run(10_000);
    assert_release_times(&sim, &[(0, 2000.0), (1, 2020.0), (2, 2040.0)]);
    // The first frame needed no timer; the next two one wait each.
    assert_eq!(sim.waits.len(), 2);
    assert_eq!(sim.pacer.metrics().worst_lag, Duration::ZERO);
}

#[test]
fn after_a_mid_interval_interrupt_no_old_frame_plays_and_the_new_turn_starts_at_once() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 10);
    sim.input(50, Input::Interrupt(Epoch(1)));
    sim.frames_at(73, Epoch(1), 100, 3);
    sim.run(10_000);
    assert_release_times(
        &sim,
        &[
            (0, 0.0),
            (1, 20.0),
            (2, 40.0),
            (100, 73.0),
            (101, 93.0),
            (102, 113.0),
        ],
    );
    let m = sim.pacer.metrics();
    assert_eq!((m.frames_played, m.stale_dropped, m.underruns), (6, 7, 0));
}

#[test]
fn a_due_frame_doomed_by_an_interrupt_queued_before_it_is_processed_is_neither_released_nor_counted()
 {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    // The interrupt is in the inbox at frame 3's deadline, before the poll.
    sim.input(60, Input::Interrupt(Epoch(1)));
    sim.run(10_000);
    assert_release_times(&sim, &[(0, 0.0), (1, 20.0), (2, 40.0)]);
    assert!(!sim.log.iter().any(|o| matches!(o, Out::Abandoned(..))));
    let m = sim.pacer.metrics();
    assert_eq!((m.frames_played, m.stale_dropped), (3, 2));
}

#[test]
fn an_interrupt_while_a_push_is_blocked_abandons_that_frame_uncounted() {
    let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(7));
    sim.frames_at(0, Epoch::ZERO, 0, 8);
    sim.push_returns_at = Box::new(|tag, at| if tag == 4 { at + ms(500) } else { at });
    sim.input(7 + 85, Input::Interrupt(Epoch(1)));
    sim.frames_at(100, Epoch(1), 100, 1);
    sim.run(10_000);
    assert_eq!(
        sim.log,
        vec![
            Out::Played(0, 7.0, 7.0),
            Out::Played(1, 27.0, 27.0),
            Out::Played(2, 47.0, 47.0),
            Out::Played(3, 67.0, 67.0),
            Out::Abandoned(4, 87.0),
            Out::Played(100, 100.0, 100.0),
        ]
    );
    let m = sim.pacer.metrics();
    // Frame 4 (abandoned) and frames 5..=7 (queued) are stale.
    assert_eq!((m.frames_played, m.stale_dropped), (5, 4));
}

#[test]
fn an_interrupt_after_the_push_returned_leaves_that_frame_played_then_the_new_turn_follows() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 8);
    // Frame 3 leaves at 60 ms and the sink holds it; the interrupt comes 1 ms later.
    sim.input(61, Input::Interrupt(Epoch(1)));
    sim.frames_at(70, Epoch(1), 100, 2);
    sim.run(10_000);
    assert_eq!(
        sim.log,
        vec![
            Out::Played(0, 0.0, 0.0),
            Out::Played(1, 20.0, 20.0),
            Out::Played(2, 40.0, 40.0),
            Out::Played(3, 60.0, 60.0),
            Out::Played(100, 70.0, 70.0),
            Out::Played(101, 90.0, 90.0),
        ]
    );
    let m = sim.pacer.metrics();
    assert_eq!((m.frames_played, m.stale_dropped), (6, 4));
}

#[test]
fn a_tts_end_is_held_until_the_last_frame_has_played_out() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    sim.input(0, Input::End(Epoch::ZERO));
    sim.run(10_000);
    assert_eq!(sim.log.last(), Some(&Out::Ended(Epoch::ZERO, 100.0)));
    assert_eq!(sim.played().len(), 5);
    assert_eq!(sim.waits.last(), Some(&sim.at(100)));
}

#[test]
fn a_tts_end_after_the_last_deadline_goes_out_at_once_without_a_timer() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    sim.input(150, Input::End(Epoch::ZERO));
    sim.run(10_000);
    assert_eq!(sim.log.last(), Some(&Out::Ended(Epoch::ZERO, 150.0)));
    // Only the four inter-frame waits; nothing was armed for the end.
    assert_eq!(sim.waits.len(), 4);
}

#[test]
fn a_5s_silence_between_turns_is_not_an_underrun() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 5);
    sim.input(0, Input::End(Epoch::ZERO));
    sim.frames_at(5_100, Epoch(1), 10, 3);
    sim.input(5_100, Input::End(Epoch(1)));
    sim.run(100_000);
    let m = sim.pacer.metrics();
    assert_eq!(
        (m.underruns, m.worst_lag, m.frames_played),
        (0, Duration::ZERO, 8)
    );
    assert_eq!(sim.played()[5], (10, 5100.0));
    assert_eq!(sim.log.last(), Some(&Out::Ended(Epoch(1), 5160.0)));
}

#[test]
fn frames_of_10_20_and_40ms_are_paced_by_their_own_duration() {
    let mut sim = Sim::new(OutputPacer::new());
    let frames = [
        tagged(0, 10, 8_000),
        tagged(1, 40, 48_000),
        tagged(2, 20, 16_000),
        tagged(3, 10, 24_000),
        tagged(4, 40, 16_000),
        tagged(5, 20, 22_050),
        tagged(6, 10, 16_000),
    ];
    for f in frames {
        sim.input(0, Input::Frame(Epoch::ZERO, f));
    }
    sim.run(10_000);
    assert_release_times(
        &sim,
        &[
            (0, 0.0),
            (1, 10.0),
            (2, 50.0),
            (3, 70.0),
            (4, 80.0),
            (5, 120.0),
            (6, 140.0),
        ],
    );
}

#[test]
fn phase_seeds_7_and_8_hold_the_first_frame_7ms_and_2ms() {
    for (seed, phase) in [(7, 7.0), (8, 2.0)] {
        let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(seed));
        sim.frames_at(30, Epoch::ZERO, 0, 2);
        sim.run(10_000);
        assert_release_times(&sim, &[(0, 30.0 + phase), (1, 50.0 + phase)]);
    }
    assert_eq!(phase_offset(7), ms(7));
    assert_eq!(phase_offset(8), ms(2));
}

#[test]
fn the_phase_is_a_whole_ms_below_20_the_same_for_the_same_seed_and_spread_over_seeds() {
    let mut seen = [false; 20];
    for seed in 0..256u64 {
        let p = phase_offset(seed);
        assert_eq!(p, phase_offset(seed));
        assert!(
            p < ms(20) && p.subsec_nanos().is_multiple_of(1_000_000),
            "seed {seed}: {p:?}"
        );
        seen[p.as_millis() as usize] = true;
    }
    assert!(seen.iter().all(|s| *s), "256 seeds cover every phase");
}

#[test]
fn the_phase_applies_only_to_the_sessions_first_frame() {
    let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(7));
    sim.frames_at(0, Epoch::ZERO, 0, 2);
    sim.input(0, Input::End(Epoch::ZERO));
    sim.frames_at(200, Epoch(1), 10, 1);
    sim.input(300, Input::Interrupt(Epoch(2)));
    sim.frames_at(300, Epoch(2), 20, 1);
    sim.run(10_000);
    assert_release_times(&sim, &[(0, 7.0), (1, 27.0), (10, 200.0), (20, 300.0)]);
}

#[test]
fn without_a_phase_the_first_frame_leaves_on_arrival_whatever_the_arrival_time() {
    for arrival in (0..256u64).map(|i| i * 7 + 1) {
        let mut sim = Sim::new(OutputPacer::new());
        sim.frames_at(arrival, Epoch::ZERO, 0, 1);
        sim.run(100_000);
        assert_release_times(&sim, &[(0, arrival as f64)]);
        assert!(sim.waits.is_empty());
    }
}

#[test]
fn a_stale_frame_is_dropped_on_arrival_and_counted() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.input(0, Input::Interrupt(Epoch(3)));
    sim.frames_at(10, Epoch(2), 0, 2);
    sim.input(10, Input::End(Epoch(2)));
    sim.frames_at(10, Epoch(3), 5, 1);
    sim.run(10_000);
    assert_release_times(&sim, &[(5, 10.0)]);
    assert!(!sim.log.iter().any(|o| matches!(o, Out::Ended(..))));
    assert_eq!(sim.pacer.metrics().stale_dropped, 2);
}

#[test]
fn a_producer_faster_than_real_time_is_held_back_by_the_bounded_queue_without_loss() {
    let mut sim = Sim::new(OutputPacer::new());
    sim.frames_at(0, Epoch::ZERO, 0, 500);
    sim.run(100_000);
    let expected: Vec<(i16, f64)> = (0..500).map(|k| (k, 20.0 * f64::from(k))).collect();
    assert_release_times(&sim, &expected);
    assert_eq!(sim.pacer.metrics().underruns, 0);
}

#[test]
fn the_same_scenario_twice_gives_the_same_trace() {
    let run = || {
        let mut sim = Sim::new(OutputPacer::new().with_first_frame_phase(42));
        sim.frames_at(0, Epoch::ZERO, 0, 30);
        sim.input(333, Input::Interrupt(Epoch(1)));
        sim.frames_at(400, Epoch(1), 100, 10);
        sim.input(400, Input::End(Epoch(1)));
        let mut wakes = 0u64;
        sim.timer_late = Box::new(move |_| {
            wakes += 1;
            Duration::from_micros(wakes * 7919 % 5000)
        });
        sim.run(100_000);
        (sim.log, sim.pacer.metrics())
    };
    assert_eq!(run(), run());
}
