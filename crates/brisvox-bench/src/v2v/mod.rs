//! `brisvox-bench v2v`: voice-to-voice latency of any server that speaks the
//! brisvox websocket protocol v1 (`docs/WEBSOCKET_PROTOCOL.md`), measured from the
//! outside.
//!
//! Each call sends `start` (PCM16 at the fixture's rate), streams the fixture on
//! absolute 20 ms deadlines ([`schedule`]), keeps the line open with digital
//! silence until the last reply has played, and classifies every utterance of
//! the fixture ([`turns`]): V2V = arrival of the first non-silent bot message
//! after the ground-truth end of speech minus that end. `--runs` calls in total,
//! `--concurrency` at a time. Writes `NAME.md` and `NAME.json` (every sample).
//!
//! A phone carrier's URL (`/twilio`, `/telnyx`, `/plivo`, `/vonage`,
//! `/exotel`) places each call as that carrier does instead ([`carrier`]),
//! in `--codec` (the carrier's default when not given) at the fixture's rate.
//!
//! `--transports call,webrtc` places the calls in turn over the URL's
//! route and over WebRTC beside it ([`webrtc`]: the offer to
//! `/webrtc/offer`, the same fixtures and schedule), against one server, and
//! the report sets the transports side by side.
//!
//! `--sim` starts the brisvox server in this process with an agent file of
//! mock providers ([`sim`]) and states the floor of every turn; the engine's
//! own stage times come from the servers' `turn_metrics` when present ([`hops`]).

pub(crate) mod aggregate;
pub(crate) mod carrier;
pub(crate) mod client;
pub(crate) mod fixture;
pub(crate) mod header;
pub(crate) mod hops;
pub(crate) mod schedule;
pub(crate) mod side_by_side;
pub(crate) mod sim;
pub(crate) mod stats;
pub(crate) mod turns;
pub(crate) mod webrtc;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aggregate::Aggregate;
use brisvox_transport::AudioCodec;
use client::{CallRecord, CallSettings, PreparedFixture, Transport};
use hops::EngineHops;
use side_by_side::SideBySide;
use sim::{SimInfo, SimServer};

/// Usage of `v2v`.
pub(crate) const USAGE: &str =
    "usage: brisvox-bench v2v (--url ws://127.0.0.1:PORT/call | --sim) [options]
  --url URL               server websocket URL (or BRISVOX_BENCH_URL); a path ending in
                          /twilio, /telnyx, /plivo, /vonage or /exotel places the calls
                          as that carrier does
  --transports LIST       call, webrtc or call,webrtc: over the URL's route, over WebRTC
                          (the offer to /webrtc/offer beside the URL's /call), or both in
                          turn, call by call, side by side in the report (default call)
  --codec CODEC           a carrier route's encoding: mulaw, alaw or pcm16, at the
                          fixture's rate (default mulaw on Twilio, Telnyx and Plivo,
                          pcm16 on Vonage and Exotel); refused where the carrier does
                          not stream it
  --frame-ms MS           on /call, ask the server for audio messages of MS (10, 20 or
                          40; default: not asked, the server's 20)
  --sim                   start the brisvox server in this process (127.0.0.1, a free
                          port) with the agent's mock providers; states the floor
  --route PATH            the route of --sim (default /call; a carrier's needs its
                          [telephony.<carrier>] table in the agent file)
  --agent PATH            agent file of --sim (default bench/agents/mock-no-models.toml)
  --server-workers N      tokio worker threads of the --sim server (default 2)
  --fixture PATH          fixture WAV, sidecar NAME.json next to it; repeatable
                          (default fixtures/en_two_utterances.wav)
  --runs N                calls in total, spread over the fixtures (default 1)
  --concurrency N         calls at once (default 1)
  --response-window-ms MS time allowed for a reply after an end of speech (default 6000)
  --linger-ms MS          bot silence after the last reply before `end` (default 800)
  --label TEXT            what was measured (server, configuration), in the report
  --out PATH              writes PATH.md and PATH.json (default: markdown to stdout)
  --client-workers N      tokio worker threads of the client (default 2)";

/// Options of `v2v`.
#[derive(Debug, Clone)]
pub(crate) struct V2vArgs {
    /// Call settings.
    pub(crate) call: CallSettings,
    /// Fixture WAV paths.
    pub(crate) fixtures: Vec<PathBuf>,
    /// Calls in total.
    pub(crate) runs: usize,
    /// Calls at once.
    pub(crate) concurrency: usize,
    /// Free text for the report.
    pub(crate) label: String,
    /// Output stem.
    pub(crate) out: Option<PathBuf>,
    /// Client runtime threads.
    pub(crate) client_workers: usize,
    /// Run the server in process (`--sim`).
    pub(crate) sim: bool,
    /// The `--sim` agent file.
    pub(crate) agent: PathBuf,
    /// The `--sim` route (`/call`, `/telnyx`, ...).
    pub(crate) route: String,
    /// The `--sim` server's runtime threads.
    pub(crate) server_workers: usize,
    /// How the calls are placed, in turn (`--transports`).
    pub(crate) transports: Vec<Transport>,
}

/// Parses a positive number for `flag`.
pub(crate) fn parse_num<T: std::str::FromStr + PartialOrd + Default>(
    flag: &str,
    v: &str,
) -> Result<T, String> {
    match v.parse::<T>() {
        Ok(x) if x > T::default() => Ok(x),
        _ => Err(format!("bad value for {flag}: {v}")),
    }
}

/// Default call settings (shared with `capacity`).
pub(crate) fn default_call_settings() -> CallSettings {
    CallSettings {
        url: std::env::var("BRISVOX_BENCH_URL").unwrap_or_default(),
        response_window_ms: 6000,
        linger_ms: 800,
        connect_timeout_ms: 5000,
        frame_ms: None,
        codec: None,
        transport: Transport::Url,
    }
}

fn parse(args: &[String]) -> Result<V2vArgs, String> {
    parse_with(args, USAGE)
}

/// The options of `v2v` (shared by `quality`, whose `usage` lists its own subset).
pub(crate) fn parse_with(args: &[String], usage: &str) -> Result<V2vArgs, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err(usage.to_string());
    }
    let mut a = V2vArgs {
        call: default_call_settings(),
        fixtures: Vec::new(),
        runs: 1,
        concurrency: 1,
        label: String::new(),
        out: None,
        client_workers: 2,
        sim: false,
        agent: PathBuf::from(sim::DEFAULT_AGENT),
        route: String::new(),
        server_workers: 2,
        transports: vec![Transport::Url],
    };
    let mut url_given = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--sim" {
            a.sim = true;
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{usage}"))?;
        match flag.as_str() {
            "--url" => {
                a.call.url = v.clone();
                url_given = true;
            }
            "--agent" => a.agent = PathBuf::from(v),
            "--route" if !v.starts_with('/') => {
                return Err(format!("bad value for --route: {v} (a path: /telnyx)"));
            }
            "--route" => a.route = v.clone(),
            "--codec" => a.call.codec = Some(parse_codec(v)?),
            "--frame-ms" => a.call.frame_ms = Some(parse_frame_ms(v)?),
            "--transports" => a.transports = parse_transports(v)?,
            "--server-workers" => a.server_workers = parse_num(flag, v)?,
            "--fixture" => a.fixtures.push(PathBuf::from(v)),
            "--runs" => a.runs = parse_num(flag, v)?,
            "--concurrency" => a.concurrency = parse_num(flag, v)?,
            "--response-window-ms" => a.call.response_window_ms = parse_num(flag, v)?,
            "--linger-ms" => a.call.linger_ms = parse_num(flag, v)?,
            "--label" => a.label = v.clone(),
            "--out" => a.out = Some(PathBuf::from(v)),
            "--client-workers" => a.client_workers = parse_num(flag, v)?,
            other => return Err(format!("unknown option {other}\n\n{usage}")),
        }
    }
    if a.sim && url_given {
        return Err(format!("--sim and --url exclude each other\n\n{usage}"));
    }
    if !a.sim && !a.route.is_empty() {
        return Err(format!(
            "--route goes with --sim (with --url, the URL names the route)\n\n{usage}"
        ));
    }
    if a.sim {
        a.call.url.clear();
    } else if a.call.url.is_empty() {
        return Err(format!("--url or --sim is required\n\n{usage}"));
    }
    if a.fixtures.is_empty() {
        a.fixtures
            .push(PathBuf::from("fixtures/en_two_utterances.wav"));
    }
    Ok(a)
}

/// `--transports`: `call`, `webrtc`, comma-separated, each at most once.
fn parse_transports(v: &str) -> Result<Vec<Transport>, String> {
    let mut out = Vec::new();
    for name in v.split(',') {
        let t = [Transport::Url, Transport::WebRtc]
            .into_iter()
            .find(|t| t.name() == name.trim())
            .ok_or_else(|| format!("bad value for --transports: {v} (call, webrtc)"))?;
        if out.contains(&t) {
            return Err(format!("bad value for --transports: {v} (twice {name})"));
        }
        out.push(t);
    }
    Ok(out)
}

/// A codec's name, as `--codec` takes it.
/// `--frame-ms`: the duration of the server's audio messages that `/call`'s
/// `start` asks for (10, 20 or 40).
pub(crate) fn parse_frame_ms(v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .ok()
        .filter(|ms| brisvox_transport::brisvox_ws::SUPPORTED_FRAME_MS.contains(ms))
        .ok_or_else(|| format!("bad value for --frame-ms: {v} (10, 20 or 40)"))
}

fn parse_codec(v: &str) -> Result<AudioCodec, String> {
    [AudioCodec::Mulaw, AudioCodec::Alaw, AudioCodec::Pcm16]
        .into_iter()
        .find(|c| c.as_str() == v)
        .ok_or_else(|| format!("bad value for --codec: {v} (mulaw, alaw or pcm16)"))
}

/// What the calls to `target` (a URL or a route) stream: a carrier's format
/// per fixture (an error when the carrier does not stream it), or PCM16 on
/// `/call` (where `--codec` is an error). One line for the report.
fn wire_line(
    target: &str,
    call: &CallSettings,
    fixtures: &[Arc<PreparedFixture>],
) -> Result<String, String> {
    let Some(c) = carrier::carrier_of_url(target) else {
        if let Some(codec) = call.codec {
            return Err(format!(
                "--codec {} needs a carrier's route; /call streams pcm16",
                codec.as_str()
            ));
        }
        return Ok(match call.frame_ms {
            Some(ms) => format!(
                "- wire: the brisvox protocol, PCM16 at each fixture's rate, the server's audio in {ms} ms messages (start's frame_ms)"
            ),
            None => "- wire: the brisvox protocol, PCM16 at each fixture's rate".into(),
        });
    };
    if call.frame_ms.is_some() {
        return Err(format!(
            "--frame-ms is for /call; /{} frames its audio as the carrier does",
            c.as_str()
        ));
    }
    let mut formats = Vec::new();
    for f in fixtures {
        let rate = f.fixture.sidecar.sample_rate_hz;
        let w = carrier::wire_format(c, call.codec, rate)?;
        let text = format!("{} at {} Hz", w.codec.as_str(), w.sample_rate_hz);
        if !formats.contains(&text) {
            formats.push(text);
        }
    }
    Ok(format!(
        "- wire: /{} placed as the carrier places it (its opening, media and mark echoes), {}",
        c.as_str(),
        formats.join(", ")
    ))
}

/// The wire of the WebRTC calls, for the report.
const WEBRTC_WIRE: &str = "\n- wire (webrtc): POST /webrtc/offer beside /call, then ICE-lite, DTLS-SRTP and SCTP over loopback UDP; Opus at 32 kbit/s with in-band FEC both ways (the caller's at the fixture's rate), events on the data channel; V2V taken when the bot's packet is read and decoded (the caller has no jitter buffer: a browser plays later by its jitter buffer's delay)";

/// WebRTC calls go beside a `/call` route, at a rate Opus takes.
fn check_webrtc(target: &str, fixtures: &[Arc<PreparedFixture>]) -> Result<(), String> {
    let route = target.split('?').next().unwrap_or_default();
    if !(route.is_empty() || route == "/call" || route.ends_with("/call")) {
        return Err(format!(
            "--transports webrtc goes with the /call route (the offer goes beside it): {}",
            redact(target)
        ));
    }
    for f in fixtures {
        let rate = f.fixture.sidecar.sample_rate_hz;
        if ![8_000, 12_000, 16_000, 24_000, 48_000].contains(&rate) {
            let name = &f.fixture.sidecar.name;
            return Err(format!(
                "--transports webrtc: {name} is at {rate} Hz; Opus takes 8, 12, 16, 24 or 48 kHz"
            ));
        }
    }
    Ok(())
}

/// A URL with any `token=` query value hidden, for printing.
pub(crate) fn redact(url: &str) -> String {
    match url.find("token=") {
        Some(i) => {
            let rest = &url[i + 6..];
            let end = rest.find('&').map_or(url.len(), |j| i + 6 + j);
            format!("{}***{}", &url[..i + 6], &url[end..])
        }
        None => url.to_string(),
    }
}

/// Loads and frames the fixtures.
pub(crate) fn prepare_fixtures(paths: &[PathBuf]) -> Result<Vec<Arc<PreparedFixture>>, String> {
    paths
        .iter()
        .map(|p| fixture::load(p).map(|f| Arc::new(PreparedFixture::new(f))))
        .collect()
}

/// Runs `runs` calls, at most `concurrency` at once, fixtures in rotation; the
/// results in call order.
pub(crate) async fn run_calls(
    call: &CallSettings,
    fixtures: &[Arc<PreparedFixture>],
    runs: usize,
    concurrency: usize,
    id_prefix: &str,
) -> Vec<CallRecord> {
    let transports = [call.transport];
    run_interleaved(call, &transports, fixtures, runs, concurrency, id_prefix).await
}

/// [`run_calls`] with the calls placed over `transports` in turn: call `i`
/// over `transports[i % n]` with fixture `(i / n) % fixtures`, so that each
/// fixture is played over every transport in a row.
pub(crate) async fn run_interleaved(
    call: &CallSettings,
    transports: &[Transport],
    fixtures: &[Arc<PreparedFixture>],
    runs: usize,
    concurrency: usize,
    id_prefix: &str,
) -> Vec<CallRecord> {
    let gate = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let mut tasks = Vec::with_capacity(runs);
    let n = transports.len().max(1);
    for i in 0..runs {
        let fx = fixtures[(i / n) % fixtures.len()].clone();
        let mut call = call.clone();
        call.transport = transports.get(i % n).copied().unwrap_or(call.transport);
        let gate = gate.clone();
        let id = format!("{id_prefix}-{i}");
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            client::run_call(&call, fx, &id).await
        }));
    }
    let mut out = Vec::with_capacity(runs);
    for t in tasks {
        out.push(
            t.await
                .unwrap_or_else(|e| failed_record(&format!("call task: {e}"))),
        );
    }
    out
}

/// A record for a call whose task died (a bug in the client, not the server).
fn failed_record(error: &str) -> CallRecord {
    CallRecord {
        error: Some(error.to_string()),
        ..CallRecord::default()
    }
}

/// Builds the client's runtime.
pub(crate) fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// Writes `stem.md` and `stem.json`, or the markdown to stdout without a stem.
pub(crate) fn write_outputs(
    stem: Option<&Path>,
    md: &str,
    json: &serde_json::Value,
) -> Result<(), String> {
    let Some(stem) = stem else {
        println!("{md}");
        return Ok(());
    };
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let md_path = stem.with_extension("md");
    let json_path = stem.with_extension("json");
    std::fs::write(&md_path, md).map_err(|e| format!("{}: {e}", md_path.display()))?;
    let text = serde_json::to_string_pretty(json).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text + "\n").map_err(|e| format!("{}: {e}", json_path.display()))?;
    eprintln!("wrote {} and {}", md_path.display(), json_path.display());
    Ok(())
}

/// Entry point of `brisvox-bench v2v`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let mut a = parse(args)?;
    let fixtures = prepare_fixtures(&a.fixtures)?;
    let target = if a.sim { &a.route } else { &a.call.url };
    let mut wire = wire_line(target, &a.call, &fixtures)?;
    if a.transports.contains(&Transport::WebRtc) {
        check_webrtc(target, &fixtures)?;
        wire.push_str(WEBRTC_WIRE);
    }
    let header = header::header_lines();
    let server = if a.sim {
        let s = SimServer::start(&sim::resolve_agent(&a.agent), a.server_workers)?;
        a.call.url = s.url(&a.route);
        eprintln!(
            "v2v --sim: server at {}; {}",
            a.call.url,
            s.info.floor.describe()
        );
        Some(s)
    } else {
        None
    };
    let rt = runtime(a.client_workers)?;
    let started = std::time::Instant::now();
    let calls = rt.block_on(run_interleaved(
        &a.call,
        &a.transports,
        &fixtures,
        a.runs,
        a.concurrency,
        "v2v",
    ));
    let wall_s = started.elapsed().as_secs_f64();
    let sim_info = server.map(|s| {
        let info = s.info.clone();
        s.stop();
        info
    });
    let agg = Aggregate::of(&calls);
    let hops = EngineHops::of(&calls);
    let excess = sim_info
        .as_ref()
        .map(|i| excess_over_floor(&calls, &i.floor));
    let report = Report {
        header: &header,
        wire: &wire,
        wall_s,
    };
    let mut md = markdown(&a, &fixtures, &report, &agg, &calls);
    let side = (a.transports.len() > 1).then(|| SideBySide::of(&a.transports, &calls));
    if let Some(side) = &side {
        md.push_str(&side.markdown());
    }
    md.push_str(&sim_markdown(sim_info.as_ref(), excess.as_ref(), &hops));
    let json = serde_json::json!({
        "schema": "brisvox-bench/v2v/1",
        "header": header,
        "label": a.label,
        "url": redact(&a.call.url),
        "wire": wire,
        "fixtures": a.fixtures.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "runs": a.runs,
        "concurrency": a.concurrency,
        "response_window_ms": a.call.response_window_ms,
        "non_silent_peak": turns::NON_SILENT_PEAK,
        "speaking_hold_ms": turns::SPEAKING_HOLD_US / 1000,
        "wall_s": wall_s,
        "summary": agg,
        "transports": a.transports.iter().map(|t| t.name()).collect::<Vec<_>>(),
        "side_by_side": side,
        "sim": sim_info.as_ref().map(|i| serde_json::json!({
            "server": i,
            "excess_over_floor": excess,
        })),
        "engine_hops": hops,
        "calls": calls,
    });
    write_outputs(a.out.as_deref(), &md, &json)?;
    if agg.unclean_turns() > 0 || agg.failed_calls > 0 {
        eprintln!(
            "v2v: WARNING: failed calls or unclean turns: percentiles understate the tail; not fit to commit as a latency result"
        );
    }
    eprintln!("v2v: {}", agg.markdown().lines().next().unwrap_or(""));
    Ok(())
}

/// V2V minus the floor of every answered turn, in call and turn order.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Excess {
    /// Per answered turn: call index, fixture, turn (from 1), V2V minus the floor, ms.
    pub(crate) turns: Vec<(usize, String, usize, f64)>,
    /// Nearest-rank summary, ms.
    pub(crate) summary_ms: Option<stats::Summary>,
}

fn excess_over_floor(calls: &[CallRecord], floor: &sim::Floor) -> Excess {
    let floor_ms = f64::from(floor.total_ms);
    let mut turns = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        for (k, t) in c.turns.iter().enumerate() {
            if let (turns::Outcome::Answered, Some(v)) = (t.outcome, t.v2v_ms) {
                turns.push((i, c.fixture.clone(), k + 1, v - floor_ms));
            }
        }
    }
    let values: Vec<f64> = turns.iter().map(|t| t.3).collect();
    Excess {
        summary_ms: stats::summarize(&values),
        turns,
    }
}

/// The `--sim` section (server, floor, excess) and the engine hops.
fn sim_markdown(info: Option<&SimInfo>, excess: Option<&Excess>, hops: &EngineHops) -> String {
    let mut s = String::new();
    if let Some(i) = info {
        s.push_str(&format!(
            "
## In-process server (--sim)

- agent {}: mock providers, VAD {}, turn analyzer {}, server runtime {} workers
- {}
",
            i.agent,
            i.vad,
            i.turn_analyzer,
            i.server_workers,
            i.floor.describe()
        ));
        s.push_str("- the floor assumes an end-of-turn verdict no later than the STT final and the first speakable chunk in the LLM's first token (the mock's answer)

");
        if let Some(x) = excess.and_then(|e| e.summary_ms.as_ref()) {
            s.push_str(
                "| V2V minus the floor (ms) | n | p50 | p90 | p95 | p99 | max |
|---|---|---|---|---|---|---|
",
            );
            s.push_str(&format!(
                "| all answered turns | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |

",
                x.n, x.p50, x.p90, x.p95, x.p99, x.max
            ));
        }
        if let Some(e) = excess {
            let per_turn: Vec<String> = e
                .turns
                .iter()
                .map(|(c, f, t, v)| format!("{c}:{f}/turn{t} {v:+.1}"))
                .collect();
            s.push_str(&format!(
                "V2V minus the floor per turn (call:fixture/turn ms): {}

",
                per_turn.join(", ")
            ));
        }
    }
    s.push_str(
        "
## Engine stage times (from the server's turn_metrics)

",
    );
    s.push_str(&hops.markdown());
    s
}

/// What the report says besides the calls.
struct Report<'a> {
    /// The header lines (command, machine, ...).
    header: &'a [String],
    /// What the calls stream ([`wire_line`]).
    wire: &'a str,
    /// Wall time of the calls, s.
    wall_s: f64,
}

fn markdown(
    a: &V2vArgs,
    fixtures: &[Arc<PreparedFixture>],
    report: &Report<'_>,
    agg: &Aggregate,
    calls: &[CallRecord],
) -> String {
    let title = if a.transports.contains(&Transport::WebRtc) {
        "# Voice-to-voice over the websocket and WebRTC (brisvox-bench v2v)\n\n"
    } else {
        "# Voice-to-voice over the websocket (brisvox-bench v2v)\n\n"
    };
    let mut s = String::from(title);
    for l in report.header {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&format!(
        "- target: {} ({}); {} calls, {} at once, {:.1} s\n{}\n\n",
        redact(&a.call.url),
        if a.label.is_empty() {
            "no label"
        } else {
            &a.label
        },
        a.runs,
        a.concurrency,
        report.wall_s,
        report.wire
    ));
    for f in fixtures {
        let sc = &f.fixture.sidecar;
        s.push_str(&format!(
            "- fixture {}: {} Hz, {:.0} ms, ends of speech at {} ms\n",
            sc.name,
            sc.sample_rate_hz,
            f.fixture.duration_ms(),
            sc.utterances
                .iter()
                .map(|u| format!("{:.0}", u.end_ms))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s.push_str(&format!(
        "\nV2V = arrival of the first bot message with a sample of |peak| >= {} after the fixture's end of speech, minus that end; nearest-rank percentiles; response window {} ms.\n\n",
        turns::NON_SILENT_PEAK,
        a.call.response_window_ms
    ));
    s.push_str(&agg.markdown());
    s.push_str("\n| call | fixture | turns (outcome V2V ms) | error |\n|---|---|---|---|\n");
    for (i, c) in calls.iter().enumerate() {
        let turns: Vec<String> = c
            .turns
            .iter()
            .map(|t| match t.v2v_ms {
                Some(v) => format!("{} {v:.1}", t.outcome.name()),
                None => t.outcome.name().to_string(),
            })
            .collect();
        s.push_str(&format!(
            "| {i} | {} | {} | {} |\n",
            c.fixture,
            turns.join("; "),
            c.error.as_deref().unwrap_or("")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_redacted() {
        assert_eq!(
            redact("ws://h/call?token=abc&x=1"),
            "ws://h/call?token=***&x=1"
        );
        assert_eq!(redact("ws://h/call?token=abc"), "ws://h/call?token=***");
        assert_eq!(redact("ws://h/call"), "ws://h/call");
    }

    #[test]
    fn options_parse_and_refuse_nonsense() {
        let args: Vec<String> = [
            "--url",
            "ws://127.0.0.1:1/call",
            "--runs",
            "3",
            "--concurrency",
            "2",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let a = parse(&args).unwrap();
        assert_eq!((a.runs, a.concurrency), (3, 2));
        assert_eq!(
            a.fixtures,
            vec![PathBuf::from("fixtures/en_two_utterances.wav")]
        );
        let bad: Vec<String> = ["--url", "x", "--runs", "0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(parse(&bad).is_err());
    }

    #[test]
    fn sim_needs_no_url_and_refuses_one() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = parse(&args(&["--sim", "--runs", "2"])).unwrap();
        assert!(a.sim);
        assert_eq!(a.agent, PathBuf::from(sim::DEFAULT_AGENT));
        let a = parse(&args(&["--agent", "x.toml", "--sim"])).unwrap();
        assert_eq!(a.agent, PathBuf::from("x.toml"));
        let both = parse(&args(&["--sim", "--url", "ws://h/call"]));
        assert!(both.unwrap_err().contains("exclude each other"));
        let bad = parse(&args(&["--sim", "--server-workers", "0"]));
        assert!(bad.is_err());
    }

    #[test]
    fn a_carrier_route_and_codec_parse_and_nonsense_is_refused() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = parse(&args(&["--sim", "--route", "/telnyx", "--codec", "alaw"])).unwrap();
        assert_eq!(
            (a.route.as_str(), a.call.codec),
            ("/telnyx", Some(AudioCodec::Alaw))
        );
        let no_sim = parse(&args(&["--url", "ws://h/call", "--route", "/telnyx"]));
        assert!(no_sim.unwrap_err().contains("--route goes with --sim"));
        let codec = parse(&args(&["--sim", "--codec", "opus"]));
        assert!(codec.unwrap_err().contains("bad value for --codec: opus"));
        let route = parse(&args(&["--sim", "--route", "telnyx"]));
        assert!(route.unwrap_err().contains("bad value for --route"));
        let a = parse(&args(&["--sim", "--frame-ms", "40"])).unwrap();
        assert_eq!(a.call.frame_ms, Some(40));
        assert_eq!(parse(&args(&["--sim"])).unwrap().call.frame_ms, None);
        for bad in ["30", "0", "x", "-20"] {
            let err = parse(&args(&["--sim", "--frame-ms", bad])).unwrap_err();
            assert!(err.contains("bad value for --frame-ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn transports_parse_and_nonsense_is_refused() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = parse(&args(&["--sim", "--transports", "call,webrtc"])).unwrap();
        assert_eq!(a.transports, vec![Transport::Url, Transport::WebRtc]);
        let a = parse(&args(&["--sim"])).unwrap();
        assert_eq!(a.transports, vec![Transport::Url]);
        for bad in ["rtc", "call,call", ""] {
            let err = parse(&args(&["--sim", "--transports", bad])).unwrap_err();
            assert!(err.contains("bad value for --transports"), "{bad}: {err}");
        }
        let wav = fixture::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/phone_pls_hold_while_try_8k.wav"
        )))
        .unwrap();
        let fixtures = [Arc::new(PreparedFixture::new(wav))];
        assert!(check_webrtc("ws://h:1/call?token=x", &fixtures).is_ok());
        assert!(check_webrtc("", &fixtures).is_ok());
        let err = check_webrtc("/twilio", &fixtures).unwrap_err();
        assert!(err.contains("goes with the /call route"), "{err}");
    }

    #[test]
    fn the_wire_is_checked_before_any_call() {
        let wav = fixture::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/phone_pls_hold_while_try_8k.wav"
        )))
        .unwrap();
        let fixtures = [Arc::new(PreparedFixture::new(wav))];
        let mut call = default_call_settings();
        let wire = |target: &str, call: &CallSettings| wire_line(target, call, &fixtures);
        assert!(wire("ws://h:1/call", &call).unwrap().contains("PCM16"));
        call.codec = Some(AudioCodec::Alaw);
        let err = wire("ws://h:1/call", &call).unwrap_err();
        assert!(err.contains("needs a carrier's route"), "{err}");
        let line = wire("/telnyx", &call).unwrap();
        assert!(
            line.contains("/telnyx placed as") && line.ends_with("alaw at 8000 Hz"),
            "{line}"
        );
        let err = wire("ws://h:1/twilio", &call).unwrap_err();
        assert!(
            err.contains("/twilio does not stream alaw at 8000 Hz"),
            "{err}"
        );
        let mut call = default_call_settings();
        call.frame_ms = Some(40);
        let line = wire("ws://h:1/call", &call).unwrap();
        assert!(line.contains("40 ms messages"), "{line}");
        let err = wire("/telnyx", &call).unwrap_err();
        assert!(err.contains("--frame-ms is for /call"), "{err}");
    }
}
