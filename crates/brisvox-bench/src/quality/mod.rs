//! `brisvox-bench quality`: conversation quality on recorded speech, measured
//! from the outside over the brisvox websocket protocol, so the same run
//! measures brisvox and the Pipecat peer.
//!
//! Each fixture is one call (one at a time), played in real time by the v2v
//! client; the server's audio and `clear` events are judged against what the
//! caller did ([`judge`]): premature ends of turn at pauses inside a sentence,
//! missed turns, talk-over and barge-in time on real interruptions,
//! backchannels and noise that cut the bot, the bot speaking again after a cut,
//! and V2V of the answered turns.
//!
//! `--sim` runs the brisvox server in this process (real websocket, real
//! engine, the agent file's models) with the mock STT's timed words: the
//! fixture's transcripts at their times, a stand-in for a streaming STT that
//! recognises what is said ([`script::Script::timed_words`]).

pub(crate) mod judge;
pub(crate) mod script;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use brisvox_providers::mock::{Latency, MockStt, MockSttConfig};
use serde::Serialize;

use crate::v2v::client::{self, CallRecord, CallSettings, PreparedFixture};
use crate::v2v::sim::{SimServer, resolve_agent};
use crate::v2v::stats::{Summary, summarize};
use crate::v2v::{V2vArgs, fixture, header, parse_with, redact, runtime, write_outputs};
use judge::{Judged, OverlapOutcome, TurnOutcome};
use script::Script;

/// Usage of `quality`.
pub(crate) const USAGE: &str =
    "usage: brisvox-bench quality (--url ws://127.0.0.1:PORT/call | --sim) [options]
  --url URL               server websocket URL (or BRISVOX_BENCH_URL)
  --sim                   the brisvox server in this process, STT = the mock's timed words
  --agent PATH            agent file of --sim (default bench/agents/quality.toml)
  --server-workers N      tokio worker threads of the --sim server (default 2)
  --fixture PATH          fixture WAV (sidecar next to it); repeatable (default: every
                          fixtures/*.wav and fixtures/quality/*.wav)
  --runs N                times each fixture is played (default 1)
  --response-window-ms MS longest wait for an answer after a turn (default 6000)
  --linger-ms MS          bot silence after the last answer before `end` (default 1500)
  --label TEXT            what was measured, in the report
  --out PATH              writes PATH.md and PATH.json (default: markdown to stdout)";

/// The agent file `--sim` uses by default.
const DEFAULT_AGENT: &str = "bench/agents/quality.toml";

/// Mock STT interim cadence under `--sim`, ms of audio.
const INTERIM_INTERVAL_MS: u64 = 300;

/// Parses the options: those of `v2v` (one call at a time; the fixtures and
/// the agent default to the quality set).
fn parse(args: &[String]) -> Result<V2vArgs, String> {
    let mut a = parse_with(args, USAGE)?;
    if a.concurrency != 1 {
        return Err(format!("quality plays one call at a time\n\n{USAGE}"));
    }
    let given = |flag: &str| args.iter().any(|x| x == flag);
    if !given("--linger-ms") {
        a.call.linger_ms = 1500;
    }
    if !given("--agent") {
        a.agent = PathBuf::from(DEFAULT_AGENT);
    }
    if !given("--fixture") {
        a.fixtures = default_fixtures()?;
    }
    Ok(a)
}

/// Every `fixtures/*.wav` and `fixtures/quality/*.wav`, sorted.
fn default_fixtures() -> Result<Vec<PathBuf>, String> {
    let root = resolve_agent(Path::new("fixtures"));
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("quality")] {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut wavs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wav"))
            .collect();
        wavs.sort();
        out.extend(wavs);
    }
    Ok(out)
}

/// One fixture: its frames for the client and its caller script.
struct Played {
    prepared: Arc<PreparedFixture>,
    script: Script,
}

fn load(path: &Path) -> Result<Played, String> {
    let path = resolve_agent(path);
    let fx = fixture::load(&path)?;
    let side = path.with_extension("json");
    let text = std::fs::read_to_string(&side).map_err(|e| format!("{}: {e}", side.display()))?;
    let script = script::parse(&text).map_err(|e| format!("{}: {e}", side.display()))?;
    Ok(Played {
        prepared: Arc::new(PreparedFixture::new(fx)),
        script,
    })
}

/// One call's result.
#[derive(Debug, Serialize)]
struct CallResult {
    fixture: String,
    run: usize,
    error: Option<String>,
    clears: u32,
    judged: Judged,
}

/// Entry point of `brisvox-bench quality`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let mut a = parse(args)?;
    let played: Vec<Played> = a
        .fixtures
        .iter()
        .map(|p| load(p))
        .collect::<Result<_, _>>()?;
    let header = header::header_lines();
    let stt = MockStt::new(MockSttConfig::default());
    let server = if a.sim {
        let agent = resolve_agent(&a.agent);
        let s = SimServer::start_with_stt(&agent, a.server_workers, Some(Arc::new(stt.clone())))?;
        stt.set_config(MockSttConfig {
            final_latency: Latency::Fixed(u64::from(s.info.floor.stt_final_ms)),
            interim_interval_ms: INTERIM_INTERVAL_MS,
            ..MockSttConfig::default()
        });
        a.call.url = s.url(&a.route);
        eprintln!("quality --sim: server at {}", a.call.url);
        Some(s)
    } else {
        None
    };
    let rt = runtime(a.client_workers)?;
    let results = rt.block_on(async {
        let mut out = Vec::new();
        for run in 0..a.runs {
            for p in &played {
                if a.sim {
                    stt.set_timed_words(p.script.timed_words());
                }
                let name = p.prepared.fixture.sidecar.name.clone();
                eprintln!("quality: run {run} {name}");
                let rec =
                    client::run_call(&a.call, p.prepared.clone(), &format!("q{run}-{name}")).await;
                out.push(result_of(&a.call, p, run, rec));
            }
        }
        out
    });
    // The calls have ended: their counters are in the server's metrics.
    let counters = server
        .as_ref()
        .map(|s| s.metrics.call_counter_values())
        .unwrap_or_default();
    if let Some(s) = server {
        s.stop();
    }
    let totals = Totals::of(&results);
    let mut md = markdown(&a, &header, &totals, &results);
    md.push_str(&counters_markdown(&counters, totals.answered));
    let json = serde_json::json!({
        "schema": "brisvox-bench/quality/1",
        "header": header,
        "label": a.label,
        "url": if a.sim { "--sim".to_string() } else { redact(&a.call.url) },
        "agent": a.sim.then(|| a.agent.display().to_string()),
        "runs": a.runs,
        "totals": totals,
        "server_counters": counters.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "calls": results,
    });
    write_outputs(a.out.as_deref(), &md, &json)
}

/// The server's own counts of the run (`--sim` only): turn-taking events and
/// speculative runs, with the speculation hit rates.
fn counters_markdown(counters: &[(String, u64)], answered: usize) -> String {
    if counters.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n## Server counters (the engine's own counts, from its /metrics)\n\n| counter | value |\n|---|---|\n",
    );
    for (name, value) in counters {
        md.push_str(&format!("| `{name}` | {value} |\n"));
    }
    let get = |name: &str| {
        counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    let started = get("brisvox_speculation_runs_total{result=\"started\"}");
    if started > 0 {
        let committed = get("brisvox_speculation_runs_total{result=\"committed\"}");
        md.push_str(&format!(
            "\nSpeculation: {committed} of {answered} answered turns committed a run ({:.0} %); {committed} of {started} runs committed ({:.0} %), {} extra requests per answered turn.\n",
            100.0 * committed as f64 / answered.max(1) as f64,
            100.0 * committed as f64 / started as f64,
            format_args!("{:.2}", (started - committed) as f64 / answered.max(1) as f64),
        ));
    }
    md
}

fn result_of(call: &CallSettings, p: &Played, run: usize, rec: CallRecord) -> CallResult {
    let judged = judge::judge(
        &p.script,
        &rec.bot_audio_us,
        &rec.clear_us,
        call.response_window_ms * 1000,
    );
    CallResult {
        fixture: rec.fixture,
        run,
        error: rec.error,
        clears: rec.clears,
        judged,
    }
}

/// What every call of a run added up to.
#[derive(Debug, Default, Serialize)]
struct Totals {
    calls: usize,
    failed_calls: usize,
    turns: usize,
    answered: usize,
    premature_ends: usize,
    missed_turns: usize,
    bot_still_speaking: usize,
    barge_ins: usize,
    talk_overs: usize,
    backchannels_over_bot: usize,
    backchannel_cuts: usize,
    noise_over_bot: usize,
    noise_cuts: usize,
    overlaps_not_over_bot: usize,
    spoke_again_after_cut: usize,
    v2v_ms: Option<Summary>,
    barge_in_ms: Option<Summary>,
}

impl Totals {
    fn of(results: &[CallResult]) -> Totals {
        let mut t = Totals {
            calls: results.len(),
            ..Totals::default()
        };
        let (mut v2v, mut barge) = (Vec::new(), Vec::new());
        for r in results {
            t.failed_calls += usize::from(r.error.is_some());
            for turn in &r.judged.turns {
                t.turns += 1;
                match turn.outcome {
                    TurnOutcome::Answered => t.answered += 1,
                    TurnOutcome::PrematureEnd => t.premature_ends += 1,
                    TurnOutcome::Missed => t.missed_turns += 1,
                    TurnOutcome::BotStillSpeaking => t.bot_still_speaking += 1,
                }
                v2v.extend(turn.v2v_ms);
                barge.extend(turn.barge_in_ms);
                t.barge_ins += usize::from(turn.barge_in);
                t.talk_overs += usize::from(turn.talk_over);
            }
            for o in &r.judged.overlaps {
                let noise = o.kind == "noise";
                match o.outcome {
                    OverlapOutcome::NotOverBot => t.overlaps_not_over_bot += 1,
                    OverlapOutcome::Kept | OverlapOutcome::Cut => {
                        let cut = o.outcome == OverlapOutcome::Cut;
                        if noise {
                            t.noise_over_bot += 1;
                            t.noise_cuts += usize::from(cut);
                        } else {
                            t.backchannels_over_bot += 1;
                            t.backchannel_cuts += usize::from(cut);
                        }
                    }
                }
                t.spoke_again_after_cut += usize::from(o.spoke_again);
            }
        }
        t.v2v_ms = summarize(&v2v);
        t.barge_in_ms = summarize(&barge);
        t
    }
}

fn summary_cell(s: Option<Summary>, p_hi: &str) -> String {
    match s {
        Some(s) if p_hi == "p95" => format!("{:.0} / {:.0} (n = {})", s.p50, s.p95, s.n),
        Some(s) => format!("{:.0} / {:.0} / {:.0} (n = {})", s.p50, s.p90, s.max, s.n),
        None => "-".into(),
    }
}

fn markdown(a: &V2vArgs, header: &[String], t: &Totals, results: &[CallResult]) -> String {
    let mut md = String::from("# Conversation quality (brisvox-bench quality)\n\n");
    for line in header {
        md.push_str(line);
        md.push('\n');
    }
    md.push_str(&format!(
        "- label: {}\n- server: {}\n- fixtures: {} (each played {} time(s), one call at a time)\n",
        if a.label.is_empty() { "-" } else { &a.label },
        if a.sim {
            format!(
                "brisvox in this process (`--sim`), agent `{}`, STT: the mock's timed words (the fixtures' transcripts at their times, a period at each turn's end, interims every {INTERIM_INTERVAL_MS} ms of audio)",
                a.agent.display()
            )
        } else {
            redact(&a.call.url)
        },
        a.fixtures.len(),
        a.runs
    ));
    md.push_str(&format!(
        "- judged from the client (module docs of `quality::judge`): runs of bot audio < {} ms apart; a `clear` within {} ms of an overlap's onset is a cut; a barge-in slower than {} ms is talk-over; answers within {} ms\n\n",
        judge::RUN_GAP_US / 1000,
        judge::CUT_WINDOW_US / 1000,
        judge::TALK_OVER_US / 1000,
        a.call.response_window_ms
    ));
    md.push_str("| metric | value |\n|---|---|\n");
    let rows: [(&str, String); 14] = [
        (
            "calls (failed)",
            format!("{} ({})", t.calls, t.failed_calls),
        ),
        ("turns", t.turns.to_string()),
        ("answered", t.answered.to_string()),
        ("premature ends of turn", t.premature_ends.to_string()),
        ("missed turns", t.missed_turns.to_string()),
        (
            "turns that began while the bot still spoke",
            t.bot_still_speaking.to_string(),
        ),
        (
            "V2V of answered turns p50 / p90 / max, ms",
            summary_cell(t.v2v_ms, "p90"),
        ),
        (
            "barge-ins (talk-over > 1 s)",
            format!("{} ({})", t.barge_ins, t.talk_overs),
        ),
        (
            "barge-in time onset -> bot silent p50 / p95, ms",
            summary_cell(t.barge_in_ms, "p95"),
        ),
        (
            "backchannels over the bot",
            t.backchannels_over_bot.to_string(),
        ),
        (
            "backchannels that cut the bot",
            t.backchannel_cuts.to_string(),
        ),
        (
            "noise bursts over the bot (cuts)",
            format!("{} ({})", t.noise_over_bot, t.noise_cuts),
        ),
        (
            "bot spoke again after a cut (resume or reply)",
            t.spoke_again_after_cut.to_string(),
        ),
        (
            "overlaps that missed the bot's speech",
            t.overlaps_not_over_bot.to_string(),
        ),
    ];
    for (k, v) in rows {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    md.push_str("\n## Per call\n\n| fixture | run | turns (outcome, V2V ms) | overlaps | error |\n|---|---|---|---|---|\n");
    for r in results {
        let turns: Vec<String> = r
            .judged
            .turns
            .iter()
            .map(|t| {
                let v = t.v2v_ms.map_or(String::new(), |v| format!(" {v:.0}"));
                let b = t
                    .barge_in_ms
                    .map_or(String::new(), |b| format!(" (barge-in {b:.0})"));
                format!("{:?}{v}{b}", t.outcome)
            })
            .collect();
        let overlaps: Vec<String> = r
            .judged
            .overlaps
            .iter()
            .map(|o| {
                format!(
                    "{} {:?}{}",
                    o.transcript,
                    o.outcome,
                    if o.spoke_again { " +again" } else { "" }
                )
            })
            .collect();
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            r.fixture,
            r.run,
            turns.join("; "),
            overlaps.join("; "),
            r.error.as_deref().unwrap_or("")
        ));
    }
    md
}
