//! The results of `sim-load`: each step's figures from its call outcomes and
//! probe samples ([`Step::measure`]), and the markdown and JSON files, written
//! only when every step is clean ([`write_if_clean`]).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use super::Options;
use super::call::{self, CallOutcome};
use super::metrics::{self, CpuAt, Tally};
use super::probes::{SAMPLE_EVERY, Sample, WAKE_EVERY, Wake};
use crate::v2v::header;
use crate::v2v::stats::{Summary, summarize};

/// Failure texts kept per step (the first ones), for the diagnosis.
const FAILURES_KEPT: usize = 10;

/// Every sample of a step, for the JSON file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct StepSamples {
    /// Overhead per answered turn, ms.
    pub(crate) overhead_ms: Vec<f64>,
    /// TurnEnd -> LlmRequestSent per answered turn, ms.
    pub(crate) turn_end_to_llm_ms: Vec<f64>,
    /// TtsFirstByte -> FirstAudioOut per answered turn, ms.
    pub(crate) tts_first_byte_to_transport_ms: Vec<f64>,
    /// Wake delays while calls were running, ms.
    pub(crate) wake_ms: Vec<f64>,
}

/// The figures of one step.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Step {
    /// Calls in the step.
    pub(crate) sessions: usize,
    /// Failures, answered turns, barge-ins, leaks, missing marks.
    pub(crate) tally: Tally,
    /// Overhead per turn, ms.
    pub(crate) overhead_ms: Option<Summary>,
    /// TurnEnd -> LlmRequestSent, ms.
    pub(crate) turn_end_to_llm_ms: Option<Summary>,
    /// TtsFirstByte -> FirstAudioOut, ms.
    pub(crate) tts_first_byte_to_transport_ms: Option<Summary>,
    /// Wake delay while calls were running (first start to last end), ms.
    pub(crate) wake_ms: Option<Summary>,
    /// From the first call's start to the last call's end, s.
    pub(crate) active_s: f64,
    /// The plateau (last start, first end), s since the step's origin.
    pub(crate) plateau_s: (f64, f64),
    /// CPU cores busy on the plateau.
    pub(crate) plateau_cores: Option<f64>,
    /// RSS before the calls, KiB.
    pub(crate) rss_before_kib: f64,
    /// (peak RSS - RSS before) / calls, KiB.
    pub(crate) rss_per_call_kib: f64,
    /// (peak Rust heap - heap before) / calls, KiB.
    pub(crate) heap_per_call_kib: f64,
    /// (Rust heap after the settle - heap before) / calls, KiB.
    pub(crate) heap_retained_per_call_kib: f64,
    /// Alive tasks before the calls (the probe's own task).
    pub(crate) tasks_before: usize,
    /// (most alive tasks on the plateau - tasks before) / calls.
    pub(crate) tasks_per_call: f64,
    /// Alive tasks after the settle.
    pub(crate) tasks_after: usize,
    /// Caller frames an STT session could not take, all calls.
    pub(crate) stt_frames_dropped: u64,
    /// The first failure texts.
    pub(crate) failures: Vec<String>,
    /// Every sample.
    pub(crate) samples: StepSamples,
}

impl Step {
    /// Measures a step from its outcomes and probe readings.
    pub(crate) fn measure(
        sessions: usize,
        origin: Instant,
        before: Sample,
        after: Sample,
        outcomes: &[CallOutcome],
        samples: &[Sample],
        wakes: &[Wake],
    ) -> Step {
        let secs =
            |t: Option<Instant>| t.map(|t| t.saturating_duration_since(origin).as_secs_f64());
        let starts: Vec<f64> = outcomes.iter().filter_map(|o| secs(o.start)).collect();
        let ends: Vec<f64> = outcomes.iter().filter_map(|o| secs(o.end)).collect();
        let fold = |v: &[f64], f: fn(f64, f64) -> f64, init| v.iter().copied().fold(init, f);
        let first_start = fold(&starts, f64::min, f64::INFINITY);
        let last_start = fold(&starts, f64::max, 0.0);
        let first_end = fold(&ends, f64::min, f64::INFINITY);
        let last_end = fold(&ends, f64::max, 0.0);
        let cpu: Vec<CpuAt> = samples
            .iter()
            .map(|s| CpuAt {
                wall_s: s.wall_s,
                cpu_s: s.cpu_s,
            })
            .collect();
        let on_plateau = samples
            .iter()
            .filter(|s| s.wall_s >= last_start && s.wall_s <= first_end);
        let tasks_max = on_plateau.map(|s| s.alive_tasks).max().unwrap_or(0);
        let rss_peak = samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
        let heap_peak = samples.iter().map(|s| s.heap_bytes).max().unwrap_or(0);
        let n = sessions as f64;
        let per_call_kib = |bytes: f64| bytes / 1024.0 / n;
        let mut step = Step {
            sessions,
            tally: tally(outcomes, after.alive_tasks, before.alive_tasks),
            overhead_ms: None,
            turn_end_to_llm_ms: None,
            tts_first_byte_to_transport_ms: None,
            wake_ms: None,
            active_s: (last_end - first_start).max(0.0),
            plateau_s: (last_start, first_end),
            plateau_cores: metrics::plateau_cores(&cpu, last_start, first_end),
            rss_before_kib: before.rss_bytes as f64 / 1024.0,
            rss_per_call_kib: per_call_kib(rss_peak.saturating_sub(before.rss_bytes) as f64),
            heap_per_call_kib: per_call_kib((heap_peak - before.heap_bytes).max(0) as f64),
            heap_retained_per_call_kib: per_call_kib((after.heap_bytes - before.heap_bytes) as f64),
            tasks_before: before.alive_tasks,
            tasks_per_call: tasks_max.saturating_sub(before.alive_tasks) as f64 / n,
            tasks_after: after.alive_tasks,
            stt_frames_dropped: outcomes.iter().map(|o| o.stt_frames_dropped).sum(),
            failures: outcomes
                .iter()
                .filter_map(|o| o.failure.clone())
                .take(FAILURES_KEPT)
                .collect(),
            samples: StepSamples::default(),
        };
        step.samples = step_samples(outcomes, wakes, first_start, last_end);
        step.summarize();
        step
    }

    fn summarize(&mut self) {
        let s = &self.samples;
        self.overhead_ms = summarize(&s.overhead_ms);
        self.turn_end_to_llm_ms = summarize(&s.turn_end_to_llm_ms);
        self.tts_first_byte_to_transport_ms = summarize(&s.tts_first_byte_to_transport_ms);
        self.wake_ms = summarize(&s.wake_ms);
    }

    /// A progress line for stderr.
    pub(crate) fn one_line(&self) -> String {
        let t = &self.tally;
        format!(
            "{} calls: {}/{} turns answered, {} failed, {} barge-ins, {} leaked; overhead p99 {} ms, wake p99 {} ms, {} cores",
            self.sessions,
            t.turns_answered,
            t.turns_expected,
            t.calls_failed,
            t.barge_ins,
            t.tasks_leaked,
            p(self.overhead_ms, |s| s.p99),
            p(self.wake_ms, |s| s.p99),
            self.plateau_cores
                .map_or("n/a".to_owned(), |c| format!("{c:.3}")),
        )
    }
}

/// Sums the outcomes; `tasks_after - tasks_before` alive tasks are leaked.
fn tally(outcomes: &[CallOutcome], tasks_after: usize, tasks_before: usize) -> Tally {
    let mut t = Tally {
        calls: outcomes.len() as u64,
        tasks_leaked: tasks_after.saturating_sub(tasks_before) as u64,
        ..Tally::default()
    };
    for o in outcomes {
        t.calls_failed += u64::from(o.failure.is_some());
        t.turns_expected += o.turns_expected;
        t.turns_answered += o.turns_answered;
        t.barge_ins += o.barge_ins;
        t.marks_missing += o.marks_missing;
    }
    t
}

fn step_samples(outcomes: &[CallOutcome], wakes: &[Wake], from_s: f64, to_s: f64) -> StepSamples {
    let mut s = StepSamples::default();
    for t in outcomes.iter().flat_map(|o| &o.timings) {
        s.overhead_ms.push(t.overhead_ms);
        s.turn_end_to_llm_ms.push(t.turn_end_to_llm_ms);
        s.tts_first_byte_to_transport_ms
            .push(t.tts_first_byte_to_transport_ms);
    }
    s.wake_ms = wakes
        .iter()
        .filter(|w| w.sent_s >= from_s && w.sent_s <= to_s)
        .map(|w| w.delay_ms)
        .collect();
    s
}

fn p(summary: Option<Summary>, pick: fn(&Summary) -> f64) -> String {
    summary.map_or("n/a".to_owned(), |s| format!("{:.3}", pick(&s)))
}

/// A whole run: its settings, header and steps.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Run {
    /// The options it ran with.
    pub(crate) options: Options,
    /// The provenance header (command, machine, build, date).
    pub(crate) header: Vec<String>,
    /// Load average when the run ended.
    pub(crate) load_at_end: String,
    /// The steps, in order.
    pub(crate) steps: Vec<Step>,
}

impl Run {
    /// A run about to start (the header is taken now).
    pub(crate) fn new(options: &Options) -> Self {
        Run {
            options: options.clone(),
            header: header::header_lines(),
            load_at_end: String::new(),
            steps: Vec::new(),
        }
    }

    /// Notes the end of the run.
    pub(crate) fn finish(&mut self) {
        self.load_at_end = std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
    }

    /// Why the run must not be written; empty when every step is clean.
    pub(crate) fn refusals(&self) -> Vec<String> {
        self.steps
            .iter()
            .flat_map(|s| metrics::refusals(s.sessions, &s.tally))
            .collect()
    }
}

/// Writes the markdown (to `out`, or stdout) and the JSON next to it, unless
/// a step was not clean: then nothing is written and the reasons are the error.
pub(crate) fn write_if_clean(run: &Run, out: Option<&Path>) -> Result<(), String> {
    let why = run.refusals();
    if !why.is_empty() {
        let failures: Vec<&String> = run.steps.iter().flat_map(|s| &s.failures).collect();
        return Err(format!(
            "sim-load refuses to write results: {}{}",
            why.join("; "),
            if failures.is_empty() {
                String::new()
            } else {
                format!("\nfirst failures: {failures:?}")
            }
        ));
    }
    let markdown = markdown(run);
    let Some(out) = out else {
        print!("{markdown}");
        return Ok(());
    };
    let json = serde_json::to_string_pretty(run).map_err(|e| format!("json: {e}"))?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(out, markdown).map_err(|e| format!("{}: {e}", out.display()))?;
    let json_path = out.with_extension("json");
    std::fs::write(&json_path, json).map_err(|e| format!("{}: {e}", json_path.display()))?;
    eprintln!(
        "sim-load: wrote {} and {}",
        out.display(),
        json_path.display()
    );
    Ok(())
}

/// The markdown report.
pub(crate) fn markdown(run: &Run) -> String {
    let mut md = String::from("# sim-load: simulated calls in one process\n\n");
    for line in &run.header {
        let _ = writeln!(md, "{line}");
    }
    let _ = writeln!(md, "- load average at end: {}", run.load_at_end);
    let _ = writeln!(md, "- tokio worker threads: {}", run.options.workers);
    md.push_str(&setup(&run.options));
    md.push_str(&tables(&run.steps));
    md.push_str(CAVEATS);
    md
}

fn setup(o: &Options) -> String {
    let s = o.script;
    format!(
        "\n## Setup\n\n\
         - Per call: the engine's full pipeline (`brisvox_engine::run_call`), energy VAD \
         (stop after {} ms of silence) and a fixed \"complete\" verdict (no models), a sink \
         that takes every paced frame at once.\n\
         - Caller: {} utterances of {} ms (a 300 Hz tone), each followed by {} ms of silence \
         ({} ms per call); calls start evenly over {} ms.\n\
         - Mocks (one set per call, seed {} mixed with the call's index): log-normal \
         latencies, sigma {} of the log, medians STT final {} ms, LLM first token {} ms \
         (then a word per {} ms), TTS first byte {} ms; answer \"{}\".\n\
         - Probes: a sampler thread every {} ms (process CPU, VmRSS, Rust heap, alive tasks); \
         a plain thread wakes a runtime task every {} ms.\n",
        call::MIN_SILENCE_MS,
        s.turns,
        s.speech_ms,
        s.gap_ms,
        s.duration_ms(),
        o.ramp_ms,
        o.seed,
        call::LATENCY_SIGMA,
        call::STT_FINAL_MEDIAN_MS,
        call::LLM_FIRST_TOKEN_MEDIAN_MS,
        call::LLM_TOKEN_INTERVAL_MS,
        call::TTS_FIRST_BYTE_MEDIAN_MS,
        call::ANSWER,
        SAMPLE_EVERY.as_millis(),
        WAKE_EVERY.as_millis(),
    )
}

fn tables(steps: &[Step]) -> String {
    let mut md = String::from(
        "\n## Results\n\nLatencies in ms (nearest-rank p50 / p99 / max).\n\n\
         | calls | turns answered | failed | barge-ins | overhead | turn end -> LLM | TTS first byte -> transport | wake | cores on plateau | plateau s |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in steps {
        let t = &s.tally;
        let _ = writeln!(
            md,
            "| {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            s.sessions,
            t.turns_answered,
            t.turns_expected,
            t.calls_failed,
            t.barge_ins,
            triple(s.overhead_ms),
            triple(s.turn_end_to_llm_ms),
            triple(s.tts_first_byte_to_transport_ms),
            triple(s.wake_ms),
            s.plateau_cores
                .map_or("n/a".to_owned(), |c| format!("{c:.3}")),
            (s.plateau_s.1 - s.plateau_s.0).max(0.0),
        );
    }
    md.push_str(
        "\n| calls | RSS per call KiB | Rust heap per call KiB | heap retained per call KiB | tasks per call | tasks before / after | leaked | STT frames dropped |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for s in steps {
        let _ = writeln!(
            md,
            "| {} | {:.1} | {:.1} | {:.2} | {:.2} | {} / {} | {} | {} |",
            s.sessions,
            s.rss_per_call_kib,
            s.heap_per_call_kib,
            s.heap_retained_per_call_kib,
            s.tasks_per_call,
            s.tasks_before,
            s.tasks_after,
            s.tally.tasks_leaked,
            s.stt_frames_dropped,
        );
    }
    md
}

fn triple(s: Option<Summary>) -> String {
    s.map_or("n/a".to_owned(), |s| {
        format!("{:.3} / {:.3} / {:.3}", s.p50, s.p99, s.max)
    })
}

const CAVEATS: &str = "
## Definitions and caveats

Definitions: `bench/results/README.md` (sim-load). Overhead = (FirstAudioOut - TurnEnd) minus
(LlmFirstSentence - LlmRequestSent) minus (TtsFirstByte - TtsRequest); it does not see a late
wake-up inside a provider interval (marks are taken on receipt) nor anything before TurnEnd.
The wake column covers the time from the first call's start to the last call's end.
Cores = process CPU time / wall time on the plateau (every call started, none ended), so it
includes the sampler and wake-probe threads. RSS per call = (peak - before) / calls, with
fixed process growth and the mocks included; steps run in one process in the order given,
so a later step may reuse memory an earlier one freed (RSS per call is then low; the Rust
heap column counts live bytes and is not affected). Tasks: tokio's alive-task count
(spawned tasks only, not spawn_blocking or other threads). Mocks do no TLS, WebSocket,
JSON or codec work and nothing uses a model or the inference pool: this is the cost of
orchestration and scheduling only.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn clean_step(sessions: usize) -> Step {
        let outcome = CallOutcome {
            turns_expected: 3,
            turns_answered: 3,
            ..CallOutcome::default()
        };
        let sample = |wall_s, alive_tasks| Sample {
            wall_s,
            cpu_s: wall_s / 2.0,
            rss_bytes: 0,
            heap_bytes: 0,
            alive_tasks,
        };
        let outcomes = vec![outcome; sessions];
        Step::measure(
            sessions,
            Instant::now(),
            sample(0.0, 1),
            sample(2.0, 1),
            &outcomes,
            &[sample(0.0, 1), sample(1.0, 1), sample(2.0, 1)],
            &[],
        )
    }

    fn run(steps: Vec<Step>) -> Run {
        Run {
            options: Options::default(),
            header: vec!["- command: `test`".to_owned()],
            load_at_end: "0 0 0".to_owned(),
            steps,
        }
    }

    fn temp_out(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sim-load-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("out.md")
    }

    #[test]
    fn a_run_with_an_unanswered_turn_writes_nothing() {
        let mut step = clean_step(2);
        step.tally.turns_answered -= 1;
        let out = temp_out("unanswered");
        let err = write_if_clean(&run(vec![clean_step(2), step]), Some(&out)).unwrap_err();
        assert!(err.contains("1 of 6 turns went unanswered"), "{err}");
        assert!(!out.exists());
        assert!(!out.with_extension("json").exists());
    }

    #[test]
    fn a_clean_run_writes_markdown_and_json() {
        let out = temp_out("clean");
        write_if_clean(&run(vec![clean_step(2)]), Some(&out)).unwrap();
        let md = std::fs::read_to_string(&out).unwrap();
        assert!(md.starts_with("# sim-load"));
        assert!(md.contains("- command: `test`"));
        assert!(md.contains("| 2 | 6 / 6 | 0 | 0 |"), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap())
                .unwrap();
        assert_eq!(json["steps"][0]["tally"]["turns_answered"], 6);
        let _ = std::fs::remove_dir_all(out.parent().unwrap());
    }

    #[test]
    fn step_percentiles_are_nearest_rank_over_every_answered_turn() {
        use super::super::metrics::TurnTiming;
        let outcomes: Vec<CallOutcome> = (1..=100)
            .map(|i| CallOutcome {
                turns_expected: 1,
                turns_answered: 1,
                timings: vec![TurnTiming {
                    overhead_ms: f64::from(101 - i),
                    turn_end_to_llm_ms: 0.5,
                    tts_first_byte_to_transport_ms: 0.25,
                }],
                ..CallOutcome::default()
            })
            .collect();
        let s = step_samples(&outcomes, &[], 0.0, 1.0);
        let o = summarize(&s.overhead_ms).unwrap();
        assert_eq!((o.n, o.p50, o.p99, o.max), (100, 50.0, 99.0, 100.0));
        // Wake-ups outside the active window are left out.
        let wakes = [0.5, 1.5, 2.5].map(|sent_s| Wake {
            sent_s,
            delay_ms: sent_s,
        });
        let s = step_samples(&[], &wakes, 1.0, 2.0);
        assert_eq!(s.wake_ms, vec![1.5]);
    }

    #[test]
    fn leaked_tasks_are_counted_from_the_count_before_the_step() {
        let t = tally(&[CallOutcome::default()], 5, 1);
        assert_eq!(t.tasks_leaked, 4);
        assert_eq!(tally(&[], 1, 3).tasks_leaked, 0);
    }
}
