//! `brisvox-bench capacity`: how many concurrent calls a server carries while p95
//! V2V stays within `floor + --slo-over-floor-ms`, with no failed call and no lost
//! or unclean turn.
//!
//! A step of N calls starts slot i at `spread · i / N` after the step began; each
//! slot plays the fixture `--rounds` times, one call after the other (the calls of
//! [`crate::v2v::client`]). The ramp runs `--steps` in order and bisects between
//! the largest passing and the smallest failing step down to `--resolution`
//! ([`ramp`]). A step in which more than `--client-late-share` of the frames left
//! more than 100 ms late is generator limited, whether or not it also failed (a
//! generator that sends late also reads the replies late, so its V2V and turn
//! verdicts are not the server's): the search ends with a lower bound. With `--server-pid` the server's process tree is
//! sampled every 500 ms ([`probe`]). With `--metrics-url` the server's
//! Prometheus counters are read before and after each step, and the step records
//! what changed ([`metrics`]: model queue waits, refused and dropped work). Every
//! step has a time limit, the whole run one too, and only loopback URLs are
//! accepted. With `--arrivals poisson` the slots start as a Poisson process and
//! each call plays one of `--fixtures` from a random point of silence
//! ([`arrivals`]), so ends of turn are not synchronised.

pub(crate) mod arrivals;
pub(crate) mod metrics;
pub(crate) mod probe;
pub(crate) mod ramp;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::v2v::aggregate::Aggregate;
use crate::v2v::client::{self, CallRecord, CallSettings, PreparedFixture};
use crate::v2v::{self, header, parse_num};
use arrivals::{Arrivals, Draws};
use ramp::{Ramp, StepOutcome};

/// Usage of `capacity`.
pub(crate) const USAGE: &str =
    "usage: brisvox-bench capacity --url ws://127.0.0.1:PORT/call [options]
  --url URL                  server websocket URL, loopback only (or BRISVOX_BENCH_URL)
  --fixture PATH             fixture WAV (default fixtures/en_two_utterances.wav)
  --arrivals aligned|poisson aligned (default): slot i of N starts at spread * i / N and plays
                             the fixture from its start; poisson: slots start as a Poisson
                             process over the spread, each call plays one of --fixtures from
                             a random point of silence
  --fixtures LIST            comma-separated WAVs the poisson calls draw from (default: --fixture)
  --seed N                   seed of the poisson draws (default 1)
  --steps LIST               ramp, comma-separated (default 1,2,4,8,16,32,64)
  --resolution N             bisect until pass and fail are N apart (default 1)
  --spread-ms MS             start the N calls of a step over MS (default 4000)
  --rounds N                 fixture plays per slot, one after the other (default 2)
  --floor-ms MS              unloaded V2V; default: p50 of a 1-call warm-up
  --slo-over-floor-ms MS     p95 V2V limit above the floor (default 250)
  --client-late-share F      share of frames > 100 ms late that marks the generator (default 0.01)
  --server-pid PID           sample CPU, RSS and PSS of this process tree every 500 ms
  --metrics-url URL          http://127.0.0.1:PORT/metrics: server counters before and after each step
  --response-window-ms MS    reply window after an end of speech (default 6000)
  --frame-ms MS              ask the server (start's frame_ms) for audio messages of MS: 10, 20
                             or 40 (default: not asked, the server's default of 20)
  --max-run-s S              the whole run stops after S seconds (default 900)
  --label TEXT               what was measured, in the report
  --out PATH                 writes PATH.md and PATH.json (default: markdown to stdout)
  --client-workers N         tokio worker threads of the load generator (default 2)
  --admitted-only            judge the calls the server admitted; a refused call (HTTP 503)
                             is counted apart, and its slot redials after a random pause,
                             uniform between 0.5 and 1.5 of the fixture's length, drawn per
                             slot from --seed (load shedding runs)";

/// Options of `capacity`.
#[derive(Debug, Clone)]
struct CapacityArgs {
    call: CallSettings,
    fixture: PathBuf,
    steps: Vec<usize>,
    resolution: usize,
    spread_ms: u64,
    rounds: usize,
    floor_ms: Option<f64>,
    slo_over_floor_ms: f64,
    client_late_share: f64,
    server_pid: Option<u32>,
    metrics_url: Option<metrics::MetricsUrl>,
    max_run_s: u64,
    label: String,
    out: Option<PathBuf>,
    client_workers: usize,
    admitted_only: bool,
    arrivals: Arrivals,
    /// The fixtures poisson calls draw from (empty: `fixture`).
    fixtures: Vec<PathBuf>,
    seed: u64,
}

fn parse(args: &[String]) -> Result<CapacityArgs, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err(USAGE.to_string());
    }
    let mut a = CapacityArgs {
        call: v2v::default_call_settings(),
        fixture: PathBuf::from("fixtures/en_two_utterances.wav"),
        steps: vec![1, 2, 4, 8, 16, 32, 64],
        resolution: 1,
        spread_ms: 4000,
        rounds: 2,
        floor_ms: None,
        slo_over_floor_ms: 250.0,
        client_late_share: 0.01,
        server_pid: None,
        metrics_url: None,
        max_run_s: 900,
        label: String::new(),
        out: None,
        client_workers: 2,
        admitted_only: false,
        arrivals: Arrivals::Aligned,
        fixtures: Vec::new(),
        seed: 1,
    };
    let args: Vec<String> = args
        .iter()
        .filter(|f| {
            let flag = f.as_str() == "--admitted-only";
            a.admitted_only |= flag;
            !flag
        })
        .cloned()
        .collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
        match flag.as_str() {
            "--url" => a.call.url = v.clone(),
            "--fixture" => a.fixture = PathBuf::from(v),
            "--steps" => {
                a.steps = v
                    .split(',')
                    .map(|s| parse_num::<usize>(flag, s.trim()))
                    .collect::<Result<_, _>>()?
            }
            "--resolution" => a.resolution = parse_num(flag, v)?,
            "--spread-ms" => a.spread_ms = parse_num(flag, v)?,
            "--rounds" => a.rounds = parse_num(flag, v)?,
            "--floor-ms" => a.floor_ms = Some(parse_num(flag, v)?),
            "--slo-over-floor-ms" => a.slo_over_floor_ms = parse_num(flag, v)?,
            "--client-late-share" => a.client_late_share = parse_num(flag, v)?,
            "--server-pid" => a.server_pid = Some(parse_num(flag, v)?),
            "--metrics-url" => {
                a.metrics_url = Some(metrics::parse_url(v).map_err(|e| format!("{e}\n\n{USAGE}"))?)
            }
            "--response-window-ms" => a.call.response_window_ms = parse_num(flag, v)?,
            "--frame-ms" => a.call.frame_ms = Some(v2v::parse_frame_ms(v)?),
            "--max-run-s" => a.max_run_s = parse_num(flag, v)?,
            "--label" => a.label = v.clone(),
            "--out" => a.out = Some(PathBuf::from(v)),
            "--client-workers" => a.client_workers = parse_num(flag, v)?,
            "--arrivals" => {
                a.arrivals = Arrivals::parse(v).map_err(|e| format!("{e}\n\n{USAGE}"))?
            }
            "--fixtures" => a.fixtures = v.split(',').map(|p| PathBuf::from(p.trim())).collect(),
            "--seed" => a.seed = parse_num(flag, v)?,
            other => return Err(format!("unknown option {other}\n\n{USAGE}")),
        }
    }
    if !is_loopback_url(&a.call.url) {
        return Err(format!(
            "--url must be a ws:// URL on a loopback address\n\n{USAGE}"
        ));
    }
    if !a.fixtures.is_empty() && a.arrivals == Arrivals::Aligned {
        return Err(format!(
            "--fixtures is for --arrivals poisson (aligned calls play --fixture)\n\n{USAGE}"
        ));
    }
    if a.fixtures.is_empty() {
        a.fixtures = vec![a.fixture.clone()];
    }
    Ok(a)
}

/// Whether `url` is `ws://` to 127.0.0.0/8, localhost or [::1].
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("ws://") else {
        return false;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The verdict on one step.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Verdict {
    /// pass / fail / generator_limited.
    pub(crate) outcome: &'static str,
    /// Why it did not pass (empty for a pass).
    pub(crate) reasons: Vec<String>,
}

/// Judges a step from its pooled calls (see the module doc for the rules).
pub(crate) fn judge(
    agg: &Aggregate,
    limit_ms: f64,
    late_share_limit: f64,
) -> (StepOutcome, Verdict) {
    let mut reasons = Vec::new();
    if agg.failed_calls > 0 {
        reasons.push(format!(
            "{} of {} calls failed",
            agg.failed_calls, agg.calls
        ));
    }
    if agg.unclean_turns() > 0 {
        reasons.push(format!("{} turns lost or unclean", agg.unclean_turns()));
    }
    match &agg.v2v_ms {
        Some(s) if s.p95 > limit_ms => {
            reasons.push(format!("p95 V2V {:.1} ms over {limit_ms:.1} ms", s.p95))
        }
        None => reasons.push("no answered turn".into()),
        Some(_) => {}
    }
    let late_share = if agg.frames_sent == 0 {
        0.0
    } else {
        agg.frames_late_100ms as f64 / agg.frames_sent as f64
    };
    let late = late_share > late_share_limit;
    let (outcome, name) = match (reasons.is_empty(), late) {
        (true, false) => (StepOutcome::Pass, "pass"),
        (false, false) => (StepOutcome::Fail, "fail"),
        (_, true) => {
            // First, so the report's reason column leads with it; the failures
            // seen at the same time follow.
            reasons.insert(
                0,
                format!(
                    "generator limited: {:.2} % of frames more than 100 ms late",
                    late_share * 100.0
                ),
            );
            (StepOutcome::GeneratorLimited, "generator_limited")
        }
    };
    (
        outcome,
        Verdict {
            outcome: name,
            reasons,
        },
    )
}

/// One step's record.
#[derive(Debug, Clone, Serialize)]
struct StepRecord {
    calls_at_once: usize,
    verdict: Verdict,
    wall_s: f64,
    timed_out: bool,
    summary: Aggregate,
    server: Option<probe::ProbeSummary>,
    generator: Option<probe::ProbeSummary>,
    /// The server's counters over the step (with `--metrics-url`).
    server_metrics: Option<metrics::StepScrape>,
    /// Calls the server refused (HTTP 503), not in `summary` with
    /// `--admitted-only`.
    refused_calls: usize,
    calls: Vec<CallRecord>,
}

/// True for a call the server refused before the upgrade.
fn is_refused(c: &CallRecord) -> bool {
    c.error
        .as_deref()
        .is_some_and(|e| e.starts_with("refused: HTTP 503"))
}

/// Time limit of a step: the spread, the rounds at their longest, and a margin.
fn step_limit(a: &CapacityArgs, fx: &PreparedFixture) -> Duration {
    let last_end_ms = fx.spans.last().map_or(0, |s| s.end_us / 1000);
    let call_ms =
        last_end_ms + a.call.response_window_ms + 10_000 + a.call.connect_timeout_ms + 5000;
    Duration::from_millis(a.spread_ms + a.rounds as u64 * call_ms + 10_000)
}

/// The fixtures of a run and where their calls may start.
struct StepFixtures {
    /// `--fixtures` (or `--fixture`), prepared.
    all: Vec<Arc<PreparedFixture>>,
    /// Each one's quiet start frames ([`arrivals::quiet_starts`]).
    starts: Vec<Vec<usize>>,
}

/// Runs one step of `n` calls at once.
async fn run_step(
    a: &CapacityArgs,
    fxs: &StepFixtures,
    n: usize,
    step_no: usize,
) -> (Vec<CallRecord>, bool) {
    let done = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut draws = Draws::new(a.seed, step_no as u64);
    let plan = arrivals::plan(
        a.arrivals,
        n,
        a.rounds,
        a.spread_ms,
        &fxs.starts,
        &mut draws,
    );
    let cut = Arc::new(arrivals::cut_all(&fxs.all, &plan));
    let begin = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for (slot, slot_plan) in plan.into_iter().enumerate() {
        let (cut, call, done, failed) = (cut.clone(), a.call.clone(), done.clone(), failed.clone());
        let start_at = begin + Duration::from_millis(slot_plan.start_ms);
        let admitted_only = a.admitted_only;
        let mut redials = arrivals::redial_draws(a.seed, step_no, slot);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start_at).await;
            let mut out = Vec::with_capacity(slot_plan.calls.len());
            for (round, start) in slot_plan.calls.iter().enumerate() {
                let fx = cut[start].clone();
                let wait_after_refusal = admitted_only.then(|| {
                    let length = Duration::from_secs_f64(fx.fixture.duration_ms() / 1000.0);
                    arrivals::redial_pause(&mut redials, length)
                });
                let r = client::run_call(&call, fx, &format!("cap-{step_no}-{slot}-{round}")).await;
                if r.error.is_some() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                done.fetch_add(1, Ordering::Relaxed);
                let pause = wait_after_refusal.filter(|_| is_refused(&r));
                out.push(r);
                if let Some(pause) = pause {
                    tokio::time::sleep(pause).await;
                }
            }
            out
        }));
    }
    let total = n * a.rounds;
    let progress = {
        let (done, failed) = (done.clone(), failed.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                eprint!(
                    "\rstep {n} calls at once: {}/{total} calls done, {} failed, {:.0} s   ",
                    done.load(Ordering::Relaxed),
                    failed.load(Ordering::Relaxed),
                    begin.elapsed().as_secs_f64()
                );
            }
        })
    };
    let longest = fxs
        .all
        .iter()
        .max_by_key(|f| f.spans.last().map_or(0, |s| s.end_us))
        .expect("at least one fixture");
    let deadline = begin + step_limit(a, longest);
    let mut calls = Vec::with_capacity(total);
    let mut timed_out = false;
    for mut t in tasks {
        match tokio::time::timeout_at(deadline, &mut t).await {
            Ok(Ok(rs)) => calls.extend(rs),
            Ok(Err(e)) => calls.push(lost_call(longest, &format!("slot task: {e}"))),
            Err(_) => {
                timed_out = true;
                t.abort();
                calls.push(lost_call(longest, "step time limit reached"));
            }
        }
    }
    progress.abort();
    eprintln!();
    (calls, timed_out)
}

/// A call that never reported (its slot was aborted): every turn no_response.
fn lost_call(fx: &PreparedFixture, why: &str) -> CallRecord {
    let mut r = CallRecord::empty(fx);
    r.error = Some(why.to_string());
    r.turns = crate::v2v::turns::classify(&fx.spans, &[], 0);
    r
}

/// Entry point of `brisvox-bench capacity`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let fx = v2v::prepare_fixtures(std::slice::from_ref(&a.fixture))?.remove(0);
    let all = v2v::prepare_fixtures(&a.fixtures)?;
    let starts = all
        .iter()
        .map(|f| match a.arrivals {
            Arrivals::Aligned => vec![0],
            Arrivals::Poisson => arrivals::quiet_starts(f, QUIET_LEAD_MS),
        })
        .collect();
    let fxs = StepFixtures { all, starts };
    let header = header::header_lines();
    let rt = v2v::runtime(a.client_workers)?;
    let run_start = Instant::now();
    let run_limit = Duration::from_secs(a.max_run_s);

    eprintln!("capacity: warm-up call (not counted)");
    let warmup = rt.block_on(client::run_call(&a.call, fx.clone(), "cap-warmup"));
    let warm_agg = Aggregate::of(std::slice::from_ref(&warmup));
    let (floor_ms, floor_source) = match (a.floor_ms, warm_agg.v2v_ms) {
        (Some(f), _) => (f, "given (--floor-ms)"),
        (None, Some(s)) => (s.p50, "measured: p50 of the 1-call warm-up"),
        (None, None) => {
            return Err(format!(
                "warm-up call gave no answered turn: {:?}",
                warmup.error
            ));
        }
    };
    let limit_ms = floor_ms + a.slo_over_floor_ms;
    eprintln!("capacity: floor {floor_ms:.1} ms ({floor_source}), p95 limit {limit_ms:.1} ms");

    let mut ramp = Ramp::new(a.steps.clone(), a.resolution);
    let mut steps = Vec::new();
    let mut stopped = "search complete";
    while let Some(n) = ramp.next_step() {
        if run_start.elapsed() >= run_limit {
            stopped = "run time limit (--max-run-s) reached";
            break;
        }
        let scrape_before = a.metrics_url.as_ref().map(metrics::scrape);
        let server = a.server_pid.map(probe::Sampler::start);
        let generator = probe::Sampler::start(std::process::id());
        let t0 = Instant::now();
        let (calls, timed_out) = rt.block_on(run_step(&a, &fxs, n, steps.len()));
        let wall_s = t0.elapsed().as_secs_f64();
        let server_metrics = scrape_before
            .zip(a.metrics_url.as_ref().map(metrics::scrape))
            .map(|(before, after)| metrics::StepScrape::of(before, after));
        let server = server.and_then(|s| probe::summarize(&s.stop()));
        let generator = probe::summarize(&generator.stop());
        let refused_calls = calls.iter().filter(|c| is_refused(c)).count();
        let summary = if a.admitted_only {
            let admitted: Vec<CallRecord> =
                calls.iter().filter(|c| !is_refused(c)).cloned().collect();
            Aggregate::of(&admitted)
        } else {
            Aggregate::of(&calls)
        };
        let (outcome, verdict) = judge(&summary, limit_ms, a.client_late_share);
        ramp.record(n, outcome);
        eprintln!(
            "step {n}: {} p95 {} ms, {} refused, {} failed, {} unclean{}{}{}",
            verdict.outcome,
            summary
                .v2v_ms
                .map_or("-".into(), |s| format!("{:.1}", s.p95)),
            refused_calls,
            summary.failed_calls,
            summary.unclean_turns(),
            server.map_or(String::new(), |s| format!(
                ", server {:.2} cores, RSS {:.0} MB",
                s.cpu_cores, s.rss_peak_mb
            )),
            server_metrics
                .as_ref()
                .and_then(|m| m.metrics.as_ref())
                .and_then(|m| m.smart_turn_wait_ms)
                .map_or(String::new(), |w| format!(
                    ", Smart Turn wait p50 {:.1} / p95 {:.1} ms over {}",
                    w.p50, w.p95, w.count
                )),
            if verdict.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", verdict.reasons.join("; "))
            }
        );
        steps.push(StepRecord {
            calls_at_once: n,
            verdict,
            wall_s,
            timed_out,
            summary,
            server,
            generator,
            server_metrics,
            refused_calls,
            calls,
        });
    }
    let result = serde_json::json!({
        "largest_passing_step": ramp.largest_pass(),
        "smallest_failing_step": ramp.smallest_fail(),
        "generator_limited_at": ramp.generator_limited_at(),
        "stopped": stopped,
    });
    let md = markdown(
        &a,
        &header,
        floor_ms,
        floor_source,
        limit_ms,
        &steps,
        &result,
    );
    let json = serde_json::json!({
        "schema": "brisvox-bench/capacity/1",
        "header": header,
        "label": a.label,
        "url": v2v::redact(&a.call.url),
        "fixture": a.fixture.display().to_string(),
        "options": {
            "steps": a.steps, "resolution": a.resolution, "spread_ms": a.spread_ms, "rounds": a.rounds,
            "slo_over_floor_ms": a.slo_over_floor_ms, "client_late_share": a.client_late_share,
            "late_frame_ms": 100, "response_window_ms": a.call.response_window_ms,
            "server_pid": a.server_pid, "max_run_s": a.max_run_s, "client_workers": a.client_workers,
            "admitted_only": a.admitted_only,
            "arrivals": a.arrivals.as_str(), "seed": a.seed,
            "fixtures": a.fixtures.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
            "metrics_url": a.metrics_url.as_ref().map(|u| format!("http://{}{}", u.authority, v2v::redact(&u.path))),
        },
        "floor_ms": floor_ms,
        "floor_source": floor_source,
        "p95_limit_ms": limit_ms,
        "warmup": warmup,
        "result": result,
        "steps": steps,
    });
    v2v::write_outputs(a.out.as_deref(), &md, &json)
}

/// How the calls arrived, for the report.
fn arrivals_note(a: &CapacityArgs) -> String {
    match a.arrivals {
        Arrivals::Aligned => {
            "aligned (slot i of N at spread * i / N, each call from the fixture's start)".into()
        }
        Arrivals::Poisson => format!(
            "poisson (seed {}; each call one of {} from a random point of silence at least {QUIET_LEAD_MS} ms before an utterance)",
            a.seed,
            a.fixtures
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How far before an utterance a poisson call may start (its VAD sees
/// silence first, as at the start of a call).
const QUIET_LEAD_MS: u64 = 300;

fn markdown(
    a: &CapacityArgs,
    header: &[String],
    floor_ms: f64,
    floor_source: &str,
    limit_ms: f64,
    steps: &[StepRecord],
    result: &serde_json::Value,
) -> String {
    let mut s = String::from("# Capacity (brisvox-bench capacity)\n\n");
    for l in header {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&format!(
        "- target: {} ({}); fixture {}, {} rounds per slot, spread {} ms; arrivals {}; {}\n- floor {floor_ms:.1} ms ({floor_source}); a step passes when no call failed, no turn was lost or unclean and p95 V2V <= {limit_ms:.1} ms{}\n\n",
        v2v::redact(&a.call.url),
        if a.label.is_empty() { "no label" } else { &a.label },
        a.fixture.display(),
        a.rounds,
        a.spread_ms,
        arrivals_note(a),
        match a.call.frame_ms {
            Some(ms) => format!("start asks for {ms} ms audio messages (frame_ms)"),
            None => "start names no frame_ms (the server's default)".to_string(),
        },
        if a.admitted_only {
            " (--admitted-only: over the calls the server admitted; refused calls apart, their slot redialling after a random pause, uniform between 0.5 and 1.5 of the fixture's length)"
        } else {
            ""
        }
    ));
    if let Some(u) = &a.metrics_url {
        s.push_str(&format!(
            "- server metrics: http://{}{} read before and after each step (waits for an inference thread: quantiles from the histogram buckets over the step, interpolated inside a bucket)\n\n",
            u.authority,
            v2v::redact(&u.path)
        ));
    }
    s.push_str(&format!(
        "result: largest passing step {}, smallest failing step {}, generator limited at {} ({})\n\n",
        result["largest_passing_step"], result["smallest_failing_step"], result["generator_limited_at"], result["stopped"]
    ));
    s.push_str("| calls at once | verdict | answered | unclean | failed calls | p50 | p95 | p99 | max | send late max / p99 (ms) | frames > 100 ms late | server cores | server RSS before / peak (MB) | server PSS before / peak (MB) | generator cores | Smart Turn verdicts / wait p50 / p95 (ms) | VAD batch wait p50 / p95 (ms) | Smart Turn refused / timed out / cancelled; VAD windows refused; frames dropped | reasons |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for st in steps {
        let v = st.summary.v2v_ms;
        let f = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
        let srv = st.server;
        let [turn, vad, lost] =
            metrics::cells(st.server_metrics.as_ref().and_then(|m| m.metrics.as_ref()));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} / {:.1} | {} | {} | {} | {} | {} | {turn} | {vad} | {lost} | {} |\n",
            st.calls_at_once,
            st.verdict.outcome,
            st.summary.outcomes.get("answered").copied().unwrap_or(0),
            st.summary.unclean_turns(),
            if a.admitted_only {
                format!("{} (+{} refused)", st.summary.failed_calls, st.refused_calls)
            } else {
                st.summary.failed_calls.to_string()
            },
            f(v.map(|x| x.p50)),
            f(v.map(|x| x.p95)),
            f(v.map(|x| x.p99)),
            f(v.map(|x| x.max)),
            st.summary.lateness_max_ms,
            st.summary.lateness_p99_ms,
            st.summary.frames_late_100ms,
            srv.map_or("-".into(), |p| format!("{:.2}", p.cpu_cores)),
            srv.map_or("-".into(), |p| format!("{:.0} / {:.0}", p.rss_before_mb, p.rss_peak_mb)),
            srv.map_or("-".into(), |p| format!("{} / {}", f(p.pss_before_mb), f(p.pss_peak_mb))),
            st.generator.map_or("-".into(), |p| format!("{:.2}", p.cpu_cores)),
            st.verdict.reasons.join("; ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2v::client::CallRecord;
    use crate::v2v::turns::{Outcome, TurnResult};

    fn call(v2v: &[f64], late: u64, error: bool) -> CallRecord {
        CallRecord {
            fixture: "f".into(),
            transport: "call",
            error: error.then(|| "x".to_string()),
            turns: v2v
                .iter()
                .map(|&v| TurnResult {
                    outcome: if v < 0.0 {
                        Outcome::NoResponse
                    } else {
                        Outcome::Answered
                    },
                    first_bot_audio_us: None,
                    v2v_ms: (v >= 0.0).then_some(v),
                })
                .collect(),
            languages: Vec::new(),
            frames_sent: 100,
            lateness_max_ms: 0.0,
            frames_late_100ms: late,
            lateness_us: vec![0; 100],
            turn_metrics: Vec::new(),
            clears: 0,
            clear_us: Vec::new(),
            bot_audio_messages: 0,
            bot_audio_us: Vec::new(),
            end_reason: None,
            call_id: String::new(),
            bot_texts: Vec::new(),
        }
    }

    #[test]
    fn a_step_passes_only_clean_and_within_the_limit() {
        let ok = Aggregate::of(&[call(&[900.0, 950.0], 0, false)]);
        assert_eq!(judge(&ok, 1200.0, 0.01).0, StepOutcome::Pass);
        let slow = Aggregate::of(&[call(&[900.0, 1300.0], 0, false)]);
        assert_eq!(judge(&slow, 1200.0, 0.01).0, StepOutcome::Fail);
        let lost = Aggregate::of(&[call(&[900.0, -1.0], 0, false)]);
        assert_eq!(judge(&lost, 1200.0, 0.01).0, StepOutcome::Fail);
        let failed = Aggregate::of(&[call(&[900.0, 950.0], 0, true)]);
        assert_eq!(judge(&failed, 1200.0, 0.01).0, StepOutcome::Fail);
    }

    #[test]
    fn late_frames_mark_the_generator_even_on_a_failing_step() {
        let late_ok = Aggregate::of(&[call(&[900.0], 2, false)]);
        let (o, v) = judge(&late_ok, 1200.0, 0.01);
        assert_eq!(o, StepOutcome::GeneratorLimited);
        assert!(v.reasons[0].contains("generator limited"));
        let one_late = Aggregate::of(&[call(&[900.0], 1, false)]);
        assert_eq!(judge(&one_late, 1200.0, 0.01).0, StepOutcome::Pass);
        // Late and slow: the slow replies may be the generator's own lateness.
        let late_slow = Aggregate::of(&[call(&[1300.0], 5, false)]);
        let (o, v) = judge(&late_slow, 1200.0, 0.01);
        assert_eq!(o, StepOutcome::GeneratorLimited);
        assert!(v.reasons[0].contains("generator limited"));
        assert!(v.reasons.iter().any(|r| r.contains("p95 V2V")));
        // Slow without late frames is the server's.
        let slow = Aggregate::of(&[call(&[1300.0], 1, false)]);
        assert_eq!(judge(&slow, 1200.0, 0.01).0, StepOutcome::Fail);
    }

    #[test]
    fn only_loopback_urls_are_accepted() {
        assert!(is_loopback_url("ws://127.0.0.1:8765/call"));
        assert!(is_loopback_url("ws://127.1.2.3/"));
        assert!(is_loopback_url("ws://localhost:1/call?token=x"));
        assert!(is_loopback_url("ws://[::1]:80/call"));
        assert!(!is_loopback_url("ws://10.0.0.1:80/call"));
        assert!(!is_loopback_url("wss://127.0.0.1/call"));
        assert!(!is_loopback_url("ws://127.0.0.1.example.com/call"));
    }
}
