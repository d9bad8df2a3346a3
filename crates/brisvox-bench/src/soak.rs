//! `brisvox-bench soak`: N calls at once for M minutes, each slot placing one
//! call after another (the fixture played in real time, over `/call` or as
//! Twilio over `/twilio`), sampled every minute: calls and turns completed in
//! the minute (answered, lost), their V2V p50/p95, and the server's process:
//! RSS, anonymous memory (the heap and every other private mapping: what
//! grows when something leaks), threads, open file descriptors, and from
//! `/metrics` (with `--metrics-url`) the active calls and alive async tasks.
//!
//! The report fits a line to each server series after the warm-up minutes
//! and states its growth per hour (memory as % of its value at the end of the
//! warm-up), and compares the V2V p95 of the first and the last quarter of
//! the samples after warm-up. Only loopback URLs are accepted; the run stops
//! after its minutes whatever happens.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::capacity::arrivals::Draws;
use crate::capacity::metrics::{self, MetricsUrl, Scrape};
use crate::capacity::{is_loopback_url, probe};
use crate::v2v::client::{self, CallRecord, CallSettings};
use crate::v2v::stats;
use crate::v2v::turns::Outcome;
use crate::v2v::{self, header, parse_num};

/// Usage of `soak`.
pub(crate) const USAGE: &str = "usage: brisvox-bench soak --url ws://127.0.0.1:PORT/twilio --calls N --minutes M [options]
  --url URL              server websocket URL (/call or /twilio), loopback only
  --fixture PATH         fixture WAV (8 kHz for /twilio; default fixtures/phone_please_try_call_later_8k.wav)
  --calls N              calls at once (slots), each placing one call after another
  --minutes M            how long (the run stops then; the calls running are ended)
  --warmup-minutes W     samples left out of the growth fits (default 5)
  --spread-ms MS         start the slots over MS (default 10000)
  --gap-ms MS            after each call a slot waits an exponential gap of mean MS
                         (seeded) before its next call, so calls do not fall into
                         step (default 0: back to back)
  --seed N               seed of the gaps (default 1)
  --server-pid PID       the server's process (required: its memory, threads, fds)
  --metrics-url URL      http://127.0.0.1:PORT/metrics: active calls, alive tasks
  --label TEXT           what was measured, in the report
  --out PATH             writes PATH.md and PATH.json (default: markdown to stdout)
  --client-workers N     tokio worker threads of the load generator (default 2)";

#[derive(Debug, Clone)]
struct SoakArgs {
    call: CallSettings,
    fixture: PathBuf,
    calls: usize,
    minutes: u64,
    warmup_minutes: u64,
    spread_ms: u64,
    gap_ms: u64,
    seed: u64,
    server_pid: u32,
    metrics_url: Option<MetricsUrl>,
    label: String,
    out: Option<PathBuf>,
    client_workers: usize,
}

fn parse(args: &[String]) -> Result<SoakArgs, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err(USAGE.to_string());
    }
    let mut a = SoakArgs {
        call: v2v::default_call_settings(),
        fixture: PathBuf::from("fixtures/phone_please_try_call_later_8k.wav"),
        calls: 0,
        minutes: 0,
        warmup_minutes: 5,
        spread_ms: 10_000,
        gap_ms: 0,
        seed: 1,
        server_pid: 0,
        metrics_url: None,
        label: String::new(),
        out: None,
        client_workers: 2,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
        match flag.as_str() {
            "--url" => a.call.url = v.clone(),
            "--fixture" => a.fixture = PathBuf::from(v),
            "--calls" => a.calls = parse_num(flag, v)?,
            "--minutes" => a.minutes = parse_num(flag, v)?,
            "--warmup-minutes" => {
                a.warmup_minutes = v
                    .parse()
                    .map_err(|_| format!("bad value for {flag}: {v}"))?
            }
            "--spread-ms" => a.spread_ms = parse_num(flag, v)?,
            "--gap-ms" => {
                a.gap_ms = v
                    .parse()
                    .map_err(|_| format!("bad value for {flag}: {v}"))?
            }
            "--seed" => {
                a.seed = v
                    .parse()
                    .map_err(|_| format!("bad value for {flag}: {v}"))?
            }
            "--server-pid" => a.server_pid = parse_num(flag, v)?,
            "--metrics-url" => {
                a.metrics_url = Some(metrics::parse_url(v).map_err(|e| format!("{e}\n\n{USAGE}"))?)
            }
            "--label" => a.label = v.clone(),
            "--out" => a.out = Some(PathBuf::from(v)),
            "--client-workers" => a.client_workers = parse_num(flag, v)?,
            other => return Err(format!("unknown option {other}\n\n{USAGE}")),
        }
    }
    if !is_loopback_url(&a.call.url) {
        return Err(format!(
            "--url must be a ws:// URL on a loopback address\n\n{USAGE}"
        ));
    }
    if a.calls == 0 || a.minutes == 0 || a.server_pid == 0 {
        return Err(format!(
            "--calls, --minutes and --server-pid are required\n\n{USAGE}"
        ));
    }
    Ok(a)
}

/// One minute of the run.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    /// Minutes since the start (the end of this sample's minute).
    minute: u64,
    calls_ended: usize,
    /// Calls that broke after the server admitted them (or could not connect).
    calls_failed: usize,
    /// Calls the server refused at admission (its documented refusal: HTTP
    /// 503 or an `error` before `started`); their turns are neither answered
    /// nor lost: the server never took them.
    calls_refused: usize,
    turns_answered: usize,
    /// Turns of admitted calls ended in the minute that got no answer.
    turns_lost: usize,
    v2v_p50_ms: Option<f64>,
    v2v_p95_ms: Option<f64>,
    rss_mb: f64,
    anon_mb: f64,
    threads: u64,
    fds: u64,
    active_calls: Option<f64>,
    alive_tasks: Option<f64>,
}

/// What the server's process shows now.
#[derive(Debug, Clone, Copy, Default)]
struct ServerReading {
    rss_mb: f64,
    anon_mb: f64,
    threads: u64,
    fds: u64,
}

fn read_server(pid: u32) -> Result<ServerReading, String> {
    let read = |file: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{file}"))
            .map_err(|e| format!("the server (pid {pid}) is gone: /proc/{pid}/{file}: {e}"))
    };
    let status = read("status")?;
    let rollup = read("smaps_rollup")?;
    let mb = |text: &str, key: &str| probe::parse_kib(text, key).unwrap_or(0) as f64 / 1024.0;
    let threads = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("/proc/{pid}/fd: {e}"))?
        .count() as u64;
    Ok(ServerReading {
        rss_mb: mb(&status, "VmRSS"),
        anon_mb: mb(&rollup, "Anonymous"),
        threads,
        fds,
    })
}

/// Runs the slots until `stop_at`; every ended call goes to `ended`.
fn spawn_slots(
    a: &SoakArgs,
    fx: &Arc<client::PreparedFixture>,
    stop_at: tokio::time::Instant,
    ended: mpsc::UnboundedSender<CallRecord>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let begin = tokio::time::Instant::now();
    let call_s = fx.fixture.duration_ms() / 1000.0;
    let gap_ms = a.gap_ms as f64;
    (0..a.calls)
        .map(|slot| {
            let (fx, call, ended) = (fx.clone(), a.call.clone(), ended.clone());
            let mut draws = Draws::new(a.seed, slot as u64);
            let start_at =
                begin + Duration::from_millis(a.spread_ms * slot as u64 / a.calls as u64);
            tokio::spawn(async move {
                tokio::time::sleep_until(start_at).await;
                for round in 0u64.. {
                    if tokio::time::Instant::now() >= stop_at {
                        return;
                    }
                    let id = format!("soak-{slot}-{round}");
                    let Ok(r) =
                        tokio::time::timeout_at(stop_at, client::run_call(&call, fx.clone(), &id))
                            .await
                    else {
                        return; // the run is over: a call cut short is not counted
                    };
                    let refused = r.error.is_some();
                    let _ = ended.send(r);
                    if refused {
                        // Keep the offered load: wait as long as a call lasts.
                        tokio::time::sleep(Duration::from_secs_f64(call_s)).await;
                    }
                    if gap_ms > 0.0 {
                        let gap = draws.exponential(gap_ms);
                        tokio::time::sleep(Duration::from_secs_f64(gap / 1000.0)).await;
                    }
                }
            })
        })
        .collect()
}

/// Whether the server refused `call` at admission (the client's errors for a
/// refusal start with `refused:`).
fn refused(call: &CallRecord) -> bool {
    call.error
        .as_deref()
        .is_some_and(|e| e.starts_with("refused:"))
}

fn sample_of(
    minute: u64,
    calls: &[CallRecord],
    server: ServerReading,
    scrape: Option<&Scrape>,
) -> Sample {
    let mut v2v = Vec::new();
    let (mut answered, mut lost) = (0, 0);
    let admitted = calls.iter().filter(|c| !refused(c));
    for t in admitted.flat_map(|c| &c.turns) {
        match t.outcome {
            Outcome::Answered => {
                answered += 1;
                v2v.extend(t.v2v_ms);
            }
            Outcome::NoResponse => lost += 1,
            Outcome::TalkedOver | Outcome::BotSpeaking => {}
        }
    }
    let summary = stats::summarize(&v2v);
    Sample {
        minute,
        calls_ended: calls.len(),
        calls_failed: calls
            .iter()
            .filter(|c| c.error.is_some() && !refused(c))
            .count(),
        calls_refused: calls.iter().filter(|c| refused(c)).count(),
        turns_answered: answered,
        turns_lost: lost,
        v2v_p50_ms: summary.as_ref().map(|s| s.p50),
        v2v_p95_ms: summary.as_ref().map(|s| s.p95),
        rss_mb: server.rss_mb,
        anon_mb: server.anon_mb,
        threads: server.threads,
        fds: server.fds,
        active_calls: scrape.and_then(|s| s.get("brisvox_active_calls", &[])),
        alive_tasks: scrape.and_then(|s| s.get("brisvox_runtime_alive_tasks", &[])),
    }
}

/// Least-squares slope of `ys` over `xs` (per unit of x).
fn slope(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    if xs.len() < 3 {
        return None;
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Growth figures over the samples after warm-up.
#[derive(Debug, Clone, Serialize)]
struct Growth {
    samples: usize,
    rss_pct_per_h: Option<f64>,
    anon_pct_per_h: Option<f64>,
    threads_per_h: Option<f64>,
    fds_per_h: Option<f64>,
    alive_tasks_per_h: Option<f64>,
    v2v_p95_first_quarter_ms: Option<f64>,
    v2v_p95_last_quarter_ms: Option<f64>,
    turns_answered: usize,
    turns_lost: usize,
    calls_ended: usize,
    calls_failed: usize,
    calls_refused: usize,
}

fn growth(samples: &[Sample], warmup: u64) -> Growth {
    let after: Vec<&Sample> = samples.iter().filter(|s| s.minute > warmup).collect();
    let xs: Vec<f64> = after.iter().map(|s| s.minute as f64 / 60.0).collect();
    let series = |f: &dyn Fn(&Sample) -> f64| -> Vec<f64> { after.iter().map(|s| f(s)).collect() };
    let pct = |ys: Vec<f64>| {
        let base = *ys.first()?;
        slope(&xs, &ys)
            .filter(|_| base > 0.0)
            .map(|m| m / base * 100.0)
    };
    let tasks: Vec<f64> = after.iter().filter_map(|s| s.alive_tasks).collect();
    let quarter = (after.len() / 4).max(1);
    let p95_of = |part: &[&Sample]| {
        let mut v: Vec<f64> = part.iter().filter_map(|s| s.v2v_p95_ms).collect();
        v.sort_by(f64::total_cmp);
        stats::nearest_rank(&v, 50.0)
    };
    Growth {
        samples: after.len(),
        rss_pct_per_h: pct(series(&|s| s.rss_mb)),
        anon_pct_per_h: pct(series(&|s| s.anon_mb)),
        threads_per_h: slope(&xs, &series(&|s| s.threads as f64)),
        fds_per_h: slope(&xs, &series(&|s| s.fds as f64)),
        alive_tasks_per_h: (tasks.len() == xs.len())
            .then(|| slope(&xs, &tasks))
            .flatten(),
        v2v_p95_first_quarter_ms: p95_of(&after[..quarter.min(after.len())]),
        v2v_p95_last_quarter_ms: p95_of(&after[after.len().saturating_sub(quarter)..]),
        turns_answered: samples.iter().map(|s| s.turns_answered).sum(),
        turns_lost: samples.iter().map(|s| s.turns_lost).sum(),
        calls_ended: samples.iter().map(|s| s.calls_ended).sum(),
        calls_failed: samples.iter().map(|s| s.calls_failed).sum(),
        calls_refused: samples.iter().map(|s| s.calls_refused).sum(),
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn markdown(a: &SoakArgs, header: &[String], samples: &[Sample], g: &Growth) -> String {
    let mut s = String::new();
    for l in header {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(
        s,
        "# Soak: {} calls at once for {} min\n",
        a.calls, a.minutes
    );
    if !a.label.is_empty() {
        let _ = writeln!(s, "{}\n", a.label);
    }
    let placing = if a.gap_ms == 0 {
        "each slot places its calls back to back".to_owned()
    } else {
        format!(
            "each slot waits an exponential gap of mean {} ms (seed {}) after each call",
            a.gap_ms, a.seed
        )
    };
    let _ = writeln!(s, "Slots started over {} ms; {placing}.\n", a.spread_ms);
    let _ = writeln!(
        s,
        "Growth after the first {} minutes ({} samples; memory as % of its value at the first sample after warm-up, per hour):\n",
        a.warmup_minutes, g.samples
    );
    let _ = writeln!(
        s,
        "| RSS %/h | anonymous %/h | threads /h | fds /h | alive tasks /h | V2V p95 first / last quarter (ms, median of the minutes) | turns answered | turns lost | calls ended | calls failed | calls refused |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(
        s,
        "| {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} | {} |\n",
        fmt_opt(g.rss_pct_per_h, 2),
        fmt_opt(g.anon_pct_per_h, 2),
        fmt_opt(g.threads_per_h, 2),
        fmt_opt(g.fds_per_h, 2),
        fmt_opt(g.alive_tasks_per_h, 2),
        fmt_opt(g.v2v_p95_first_quarter_ms, 0),
        fmt_opt(g.v2v_p95_last_quarter_ms, 0),
        g.turns_answered,
        g.turns_lost,
        g.calls_ended,
        g.calls_failed,
        g.calls_refused
    );
    let _ = writeln!(
        s,
        "| minute | calls ended | failed | refused | turns answered | lost | V2V p50 | V2V p95 | RSS MB | anon MB | threads | fds | active calls | alive tasks |"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for x in samples {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} |",
            x.minute,
            x.calls_ended,
            x.calls_failed,
            x.calls_refused,
            x.turns_answered,
            x.turns_lost,
            fmt_opt(x.v2v_p50_ms, 0),
            fmt_opt(x.v2v_p95_ms, 0),
            x.rss_mb,
            x.anon_mb,
            x.threads,
            x.fds,
            fmt_opt(x.active_calls, 0),
            fmt_opt(x.alive_tasks, 0)
        );
    }
    s
}

/// Entry point of `brisvox-bench soak`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let fx = v2v::prepare_fixtures(std::slice::from_ref(&a.fixture))?.remove(0);
    let header = header::header_lines();
    let rt = v2v::runtime(a.client_workers)?;
    let samples = rt.block_on(run(&a, &fx))?;
    let g = growth(&samples, a.warmup_minutes);
    let md = markdown(&a, &header, &samples, &g);
    match &a.out {
        None => print!("{md}"),
        Some(out) => {
            let json = serde_json::json!({"header": header, "calls": a.calls, "minutes": a.minutes, "warmup_minutes": a.warmup_minutes, "spread_ms": a.spread_ms, "gap_ms": a.gap_ms, "seed": a.seed, "label": a.label, "growth": g, "samples": samples});
            std::fs::write(out.with_extension("md"), md).map_err(|e| e.to_string())?;
            std::fs::write(
                out.with_extension("json"),
                serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

async fn run(a: &SoakArgs, fx: &Arc<client::PreparedFixture>) -> Result<Vec<Sample>, String> {
    let started = Instant::now();
    let stop_at = tokio::time::Instant::now() + Duration::from_secs(a.minutes * 60);
    let (tx, mut ended) = mpsc::unbounded_channel();
    let slots = spawn_slots(a, fx, stop_at, tx);
    let mut samples = Vec::with_capacity(a.minutes as usize);
    let mut minute_calls = Vec::new();
    for minute in 1..=a.minutes {
        let due = tokio::time::Instant::from_std(started) + Duration::from_secs(minute * 60);
        while let Ok(Some(r)) = tokio::time::timeout_at(due, ended.recv()).await {
            minute_calls.push(r);
        }
        // Every slot may have ended early (the channel closed): the sample
        // is still taken at the minute.
        tokio::time::sleep_until(due).await;
        let server = read_server(a.server_pid)?;
        let scrape = match &a.metrics_url {
            Some(url) => {
                let url = url.clone();
                let text = tokio::task::spawn_blocking(move || metrics::fetch(&url))
                    .await
                    .map_err(|e| e.to_string())??;
                Some(Scrape::parse(&text))
            }
            None => None,
        };
        let s = sample_of(minute, &minute_calls, server, scrape.as_ref());
        eprintln!(
            "soak: minute {minute}: {} calls ended ({} failed, {} refused), {} answered, {} lost, p95 {} ms, RSS {:.1} MB, anon {:.1} MB, {} fds",
            s.calls_ended,
            s.calls_failed,
            s.calls_refused,
            s.turns_answered,
            s.turns_lost,
            fmt_opt(s.v2v_p95_ms, 0),
            s.rss_mb,
            s.anon_mb,
            s.fds
        );
        samples.push(s);
        minute_calls.clear();
    }
    for slot in slots {
        slot.abort();
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(error: Option<&str>, outcomes: &[Outcome]) -> CallRecord {
        let turns = outcomes
            .iter()
            .map(|&outcome| crate::v2v::turns::TurnResult {
                outcome,
                first_bot_audio_us: None,
                v2v_ms: (outcome == Outcome::Answered).then_some(800.0),
            })
            .collect();
        CallRecord {
            error: error.map(str::to_owned),
            turns,
            ..CallRecord::default()
        }
    }

    #[test]
    fn a_call_refused_at_admission_is_shed_not_lost() {
        let calls = [
            call(None, &[Outcome::Answered, Outcome::Answered]),
            call(
                Some("refused: HTTP 503 {\"type\":\"error\",\"code\":\"smart_turn_pressure\"}"),
                &[Outcome::NoResponse, Outcome::NoResponse],
            ),
            call(Some("receive: connection reset"), &[Outcome::NoResponse]),
        ];
        let s = sample_of(1, &calls, ServerReading::default(), None);
        assert_eq!(s.calls_ended, 3);
        assert_eq!(s.calls_refused, 1);
        assert_eq!(s.calls_failed, 1, "a call that broke after admission fails");
        assert_eq!(s.turns_answered, 2);
        assert_eq!(
            s.turns_lost, 1,
            "only the admitted call's unanswered turn is lost"
        );
    }

    #[test]
    fn gaps_and_seed_are_read_and_default_to_back_to_back() {
        let base = [
            "--url",
            "ws://127.0.0.1:1/twilio",
            "--calls",
            "3",
            "--minutes",
            "1",
        ];
        let base = base.iter().map(|s| s.to_string());
        let with = |extra: &[&str]| {
            let mut v: Vec<String> = base.clone().collect();
            v.extend(["--server-pid", "1"].iter().map(|s| s.to_string()));
            v.extend(extra.iter().map(|s| s.to_string()));
            parse(&v)
        };
        let a = with(&[]).unwrap();
        assert_eq!((a.gap_ms, a.seed), (0, 1));
        let a = with(&["--gap-ms", "1500", "--seed", "7"]).unwrap();
        assert_eq!((a.gap_ms, a.seed), (1500, 7));
        assert!(
            with(&["--gap-ms", "soon"])
                .unwrap_err()
                .contains("--gap-ms")
        );
    }

    #[test]
    fn the_slope_of_a_line_is_its_growth() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        let ys = [10.0, 12.0, 14.0, 16.0];
        assert_eq!(slope(&xs, &ys), Some(2.0));
        assert_eq!(slope(&xs[..2], &ys[..2]), None, "too few points");
    }
}
