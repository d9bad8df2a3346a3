//! `brisvox-bench flood`: connection floods against a running server while
//! reference calls go on, on loopback, bounded in count and time.
//!
//! Phases, one after the other:
//!
//! 1. **Baseline**: `--reference-calls` calls one after the other, alone
//!    (their V2V is the baseline), and the server's RSS, anonymous memory
//!    and fds.
//! 2. **Idle websockets**: `--idle` websockets upgraded on the call route
//!    that never send `start`, opened `--concurrency` at a time and held.
//!    Once all are open: the server's memory again, whence the memory per
//!    idle connection. Then each waits for the server to close it (the start
//!    timeout); how many it closed within `--close-within-s` and when.
//! 3. **Slow request heads**: `--slow` connections that send half a request
//!    head and stop; how many the server closed within `--close-within-s`.
//! 4. **Handshake flood**: `--handshakes` websocket upgrades, each closed by
//!    the client at once, `--concurrency` at a time; their rate.
//!
//! Reference calls run one after the other through phases 2 to 4; their V2V
//! and lost turns are compared with the baseline's. The client raises its
//! own open-file limit to the hard limit first.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::capacity::{is_loopback_url, probe};
use crate::v2v::aggregate::Aggregate;
use crate::v2v::client::{self, CallRecord, CallSettings, PreparedFixture};
use crate::v2v::{self, header, parse_num};

/// Usage of `flood`.
pub(crate) const USAGE: &str = "usage: brisvox-bench flood --url ws://127.0.0.1:PORT/call --server-pid PID [options]
  --url URL               the call route (/call or /twilio), loopback only
  --server-pid PID        the server's process (memory and fds)
  --fixture PATH          reference calls' fixture (default fixtures/en_two_utterances.wav; 8 kHz for /twilio)
  --reference-calls N     baseline calls before the floods (default 3)
  --idle N                idle websockets that never send start (default 10000)
  --slow N                connections sending half a request head (default 1000)
  --handshakes N          upgrades closed at once (default 2000)
  --concurrency N         connections opened at a time (default 64)
  --close-within-s S      how long to wait for the server to close them (default 30)
  --label TEXT            what was measured, in the report
  --out PATH              writes PATH.md and PATH.json (default: markdown to stdout)";

#[derive(Debug, Clone)]
struct FloodArgs {
    call: CallSettings,
    server_pid: u32,
    fixture: PathBuf,
    reference_calls: usize,
    idle: usize,
    slow: usize,
    handshakes: usize,
    concurrency: usize,
    close_within_s: u64,
    label: String,
    out: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<FloodArgs, String> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return Err(USAGE.to_string());
    }
    let mut a = FloodArgs {
        call: v2v::default_call_settings(),
        server_pid: 0,
        fixture: PathBuf::from("fixtures/en_two_utterances.wav"),
        reference_calls: 3,
        idle: 10_000,
        slow: 1000,
        handshakes: 2000,
        concurrency: 64,
        close_within_s: 30,
        label: String::new(),
        out: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?;
        match flag.as_str() {
            "--url" => a.call.url = v.clone(),
            "--server-pid" => a.server_pid = parse_num(flag, v)?,
            "--fixture" => a.fixture = PathBuf::from(v),
            "--reference-calls" => a.reference_calls = parse_num(flag, v)?,
            "--idle" => a.idle = parse_num(flag, v)?,
            "--slow" => a.slow = parse_num(flag, v)?,
            "--handshakes" => a.handshakes = parse_num(flag, v)?,
            "--concurrency" => a.concurrency = parse_num(flag, v)?,
            "--close-within-s" => a.close_within_s = parse_num(flag, v)?,
            "--label" => a.label = v.clone(),
            "--out" => a.out = Some(PathBuf::from(v)),
            other => return Err(format!("unknown option {other}\n\n{USAGE}")),
        }
    }
    if !is_loopback_url(&a.call.url) || a.server_pid == 0 {
        return Err(format!(
            "--url (loopback ws://) and --server-pid are required\n\n{USAGE}"
        ));
    }
    Ok(a)
}

/// The server's process now.
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Server {
    rss_mb: f64,
    anon_mb: f64,
    fds: u64,
}

fn read_server(pid: u32) -> Server {
    let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
    let mb = |t: &str, k: &str| probe::parse_kib(t, k).unwrap_or(0) as f64 / 1024.0;
    Server {
        rss_mb: mb(&read("status"), "VmRSS"),
        anon_mb: mb(&read("smaps_rollup"), "Anonymous"),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64),
    }
}

/// How a flood of connections went.
#[derive(Debug, Clone, Default, Serialize)]
struct FloodResult {
    attempted: usize,
    opened: usize,
    /// Refused or failed to open (the bound, an error).
    not_opened: usize,
    open_s: f64,
    /// Closed by the server within the wait.
    closed_by_server: usize,
    /// Seconds from the flood's start to the last close seen.
    last_close_s: f64,
    server_before: Server,
    /// While every connection of the flood was open (none for the handshake
    /// flood: its connections close at once).
    server_all_open: Option<Server>,
    server_after: Server,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `n` connections with `open`, `concurrency` at a time, keeping those
/// that opened.
async fn open_all<T, F, Fut>(n: usize, concurrency: usize, open: F) -> (Vec<T>, usize)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let results: Vec<Option<T>> = futures_util::stream::iter((0..n).map(|_| open()))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let failed = results.iter().filter(|r| r.is_none()).count();
    (results.into_iter().flatten().collect(), failed)
}

/// Waits for every connection to be closed by the server, up to `within`;
/// returns how many were and when the last was (seconds from `began`).
async fn closes<T, F, Fut>(conns: Vec<T>, within: Duration, began: Instant, wait: F) -> (usize, f64)
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|c| {
            let fut = wait(c);
            async move {
                matches!(tokio::time::timeout_at(deadline, fut).await, Ok(true))
                    .then(|| began.elapsed().as_secs_f64())
            }
        })
        .collect();
    let done: Vec<Option<f64>> = futures_util::future::join_all(tasks).await;
    let closed: Vec<f64> = done.into_iter().flatten().collect();
    (closed.len(), closed.iter().copied().fold(0.0, f64::max))
}

async fn idle_flood(a: &FloodArgs) -> FloodResult {
    let mut r = FloodResult {
        attempted: a.idle,
        server_before: read_server(a.server_pid),
        ..FloodResult::default()
    };
    let began = Instant::now();
    let url = a.call.url.clone();
    let (socks, failed) = open_all(a.idle, a.concurrency, || {
        let url = url.clone();
        async move {
            tokio_tungstenite::connect_async(url.as_str())
                .await
                .ok()
                .map(|(ws, _)| ws)
        }
    })
    .await;
    r.open_s = began.elapsed().as_secs_f64();
    r.opened = socks.len();
    r.not_opened = failed;
    r.server_all_open = Some(read_server(a.server_pid));
    eprintln!(
        "flood: {} idle websockets open in {:.1} s",
        r.opened, r.open_s
    );
    let (closed, last) = closes(
        socks,
        Duration::from_secs(a.close_within_s),
        began,
        |mut ws: Ws| async move {
            // Until the server's close (or the socket's end).
            while let Some(Ok(_)) = ws.next().await {}
            true
        },
    )
    .await;
    r.closed_by_server = closed;
    r.last_close_s = last;
    r.server_after = settled(a, r.server_before.fds).await;
    r
}

async fn slow_flood(a: &FloodArgs) -> FloodResult {
    let mut r = FloodResult {
        attempted: a.slow,
        server_before: read_server(a.server_pid),
        ..FloodResult::default()
    };
    let addr = authority(&a.call.url);
    let began = Instant::now();
    let (socks, failed) = open_all(a.slow, a.concurrency, || {
        let addr = addr.clone();
        async move {
            let mut s = tokio::net::TcpStream::connect(addr.as_str()).await.ok()?;
            s.write_all(b"GET /call HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                .await
                .ok()?;
            Some(s)
        }
    })
    .await;
    r.open_s = began.elapsed().as_secs_f64();
    r.opened = socks.len();
    r.not_opened = failed;
    r.server_all_open = Some(read_server(a.server_pid));
    eprintln!("flood: {} slow heads open in {:.1} s", r.opened, r.open_s);
    let (closed, last) = closes(
        socks,
        Duration::from_secs(a.close_within_s),
        began,
        |mut s: tokio::net::TcpStream| async move {
            let mut buf = [0u8; 256];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => {}
                }
            }
        },
    )
    .await;
    r.closed_by_server = closed;
    r.last_close_s = last;
    r.server_after = settled(a, r.server_before.fds).await;
    r
}

async fn handshake_flood(a: &FloodArgs) -> FloodResult {
    let mut r = FloodResult {
        attempted: a.handshakes,
        server_before: read_server(a.server_pid),
        ..FloodResult::default()
    };
    let began = Instant::now();
    let url = a.call.url.clone();
    let (done, failed) = open_all(a.handshakes, a.concurrency, || {
        let url = url.clone();
        async move {
            let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.ok()?;
            ws.close(None).await.ok()?;
            Some(())
        }
    })
    .await;
    r.open_s = began.elapsed().as_secs_f64();
    r.opened = done.len();
    r.not_opened = failed;
    r.server_after = settled(a, r.server_before.fds).await;
    r
}

/// The server once its fds are back to `fds` (its sockets of a flood
/// closed), or after `--close-within-s`.
async fn settled(a: &FloodArgs, fds: u64) -> Server {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(a.close_within_s);
    loop {
        let now = read_server(a.server_pid);
        if now.fds <= fds || tokio::time::Instant::now() >= deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `host:port` of a `ws://` URL.
fn authority(url: &str) -> String {
    let rest = url.strip_prefix("ws://").unwrap_or(url);
    rest.split(['/', '?']).next().unwrap_or_default().to_owned()
}

/// Reference calls one after the other until `stop` is set.
async fn reference_calls(
    call: CallSettings,
    fx: Arc<PreparedFixture>,
    stop: Arc<AtomicBool>,
) -> Vec<CallRecord> {
    let mut out = Vec::new();
    for n in 0u64.. {
        if stop.load(Ordering::Acquire) {
            break;
        }
        out.push(client::run_call(&call, fx.clone(), &format!("flood-ref-{n}")).await);
    }
    out
}

fn v2v_line(name: &str, agg: &Aggregate) -> String {
    let lost = agg.unclean_turns();
    match &agg.v2v_ms {
        Some(s) => format!(
            "| {name} | {} | {} | {} | {:.0} | {:.0} | {:.0} |",
            agg.calls, agg.failed_calls, lost, s.p50, s.p95, s.max
        ),
        None => format!(
            "| {name} | {} | {} | {lost} | - | - | - |",
            agg.calls, agg.failed_calls
        ),
    }
}

fn flood_line(name: &str, r: &FloodResult) -> String {
    let (before, after) = (&r.server_before, &r.server_after);
    // Per connection: the growth from before the flood to all open.
    let per_conn_kb = |open: f64, before: f64| {
        if r.opened == 0 {
            "-".to_owned()
        } else {
            format!("{:.1}", (open - before) * 1024.0 / r.opened as f64)
        }
    };
    let (open_rss, open_fds, rss_kb, anon_kb) = match &r.server_all_open {
        Some(open) => (
            format!("{:.1}", open.rss_mb),
            open.fds.to_string(),
            per_conn_kb(open.rss_mb, before.rss_mb),
            per_conn_kb(open.anon_mb, before.anon_mb),
        ),
        None => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    format!(
        "| {name} | {} | {} | {} | {:.1} | {} | {:.1} | {:.1} / {open_rss} / {:.1} | {rss_kb} | {anon_kb} | {} / {open_fds} / {} |",
        r.attempted,
        r.opened,
        r.not_opened,
        r.open_s,
        r.closed_by_server,
        r.last_close_s,
        before.rss_mb,
        after.rss_mb,
        before.fds,
        after.fds
    )
}

/// Entry point of `brisvox-bench flood`.
pub(crate) fn main(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let nofile = rlimit::increase_nofile_limit(u64::MAX).map_err(|e| format!("file limit: {e}"))?;
    eprintln!("flood: client file limit {nofile}");
    let fx = v2v::prepare_fixtures(std::slice::from_ref(&a.fixture))?.remove(0);
    let header = header::header_lines();
    let rt = v2v::runtime(2)?;
    let (baseline, during, idle, slow, handshakes) = rt.block_on(async {
        let baseline = v2v::run_calls(
            &a.call,
            std::slice::from_ref(&fx),
            a.reference_calls,
            1,
            "flood-base",
        )
        .await;
        let stop = Arc::new(AtomicBool::new(false));
        let refs = tokio::spawn(reference_calls(a.call.clone(), fx.clone(), stop.clone()));
        let idle = idle_flood(&a).await;
        let slow = slow_flood(&a).await;
        let handshakes = handshake_flood(&a).await;
        stop.store(true, Ordering::Release);
        let during = refs.await.unwrap_or_default();
        (baseline, during, idle, slow, handshakes)
    });
    let mut md = String::new();
    for l in &header {
        let _ = writeln!(md, "{l}");
    }
    let _ = writeln!(md, "# Connection floods\n");
    if !a.label.is_empty() {
        let _ = writeln!(md, "{}\n", a.label);
    }
    let _ = writeln!(
        md,
        "| flood | attempted | opened | not opened | open time (s) | closed by the server | last close (s from start) | server RSS before / all open / after (MB) | RSS per connection (KB) | anonymous per connection (KB) | server fds before / all open / after |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(md, "{}", flood_line("idle websockets (no start)", &idle));
    let _ = writeln!(md, "{}", flood_line("slow request heads", &slow));
    let _ = writeln!(
        md,
        "{}\n",
        flood_line("handshakes closed at once", &handshakes)
    );
    let _ = writeln!(
        md,
        "After: once the server's fds are back to their count before the flood, or after --close-within-s. The handshakes' connections close at once: nothing is measured with all open.\n"
    );
    let _ = writeln!(
        md,
        "Reference calls (one at a time), alone and during the floods:\n"
    );
    let _ = writeln!(
        md,
        "| calls | n | failed | lost turns | V2V p50 (ms) | p95 | max |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        md,
        "{}",
        v2v_line("alone (baseline)", &Aggregate::of(&baseline))
    );
    let _ = writeln!(
        md,
        "{}",
        v2v_line("during the floods", &Aggregate::of(&during))
    );
    match &a.out {
        None => print!("{md}"),
        Some(out) => {
            let json = serde_json::json!({"header": header, "idle": idle, "slow": slow, "handshakes": handshakes,
                "baseline": Aggregate::of(&baseline), "during": Aggregate::of(&during)});
            std::fs::write(out.with_extension("md"), &md).map_err(|e| e.to_string())?;
            std::fs::write(
                out.with_extension("json"),
                serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_row_shows_growth_per_connection_and_dashes_where_nothing_was_open() {
        let server = |rss_mb, fds| Server {
            rss_mb,
            anon_mb: rss_mb,
            fds,
        };
        let mut r = FloodResult {
            attempted: 4,
            opened: 4,
            server_before: server(100.0, 10),
            server_all_open: Some(server(101.0, 14)),
            server_after: server(100.5, 10),
            ..FloodResult::default()
        };
        let row = flood_line("idle", &r);
        assert!(
            row.contains("| 100.0 / 101.0 / 100.5 | 256.0 | 256.0 | 10 / 14 / 10 |"),
            "{row}"
        );
        r.server_all_open = None;
        let row = flood_line("handshakes", &r);
        assert!(
            row.contains("| 100.0 / - / 100.5 | - | - | 10 / - / 10 |"),
            "{row}"
        );
    }

    #[test]
    fn the_authority_of_a_ws_url() {
        assert_eq!(authority("ws://127.0.0.1:8080/call?x=1"), "127.0.0.1:8080");
    }
}
