//! `--metrics-url`: the server's Prometheus counters read before and after each
//! step, and what changed over the step that says where a ramp ends: the wait of
//! Smart Turn analyses and VAD batch jobs for an inference thread (quantiles from
//! the histogram buckets), and the work refused, skipped or dropped.
//!
//! The scrape is a plain HTTP/1.0 GET over a loopback TCP connection (no HTTP
//! client crate), with a time limit. A server without the endpoint or without a
//! series (the Pipecat peer, a brisvox without the models) gives no figures and
//! no failure: the step records why, and the report shows "-".

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;

/// How long one scrape may take (connect, send, read).
pub(crate) const SCRAPE_TIMEOUT: Duration = Duration::from_secs(3);

/// The largest response read (a brisvox exposition is a few tens of KB).
const MAX_RESPONSE_BYTES: u64 = 4 << 20;

/// A parsed `http://host:port/path` on a loopback address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MetricsUrl {
    /// `host:port` as given (port 80 when none).
    pub(crate) authority: String,
    /// Path and query, from the first `/` (`/` when none).
    pub(crate) path: String,
}

/// Parses `url`; only `http://` to 127.0.0.0/8, localhost or [::1] is accepted.
pub(crate) fn parse_url(url: &str) -> Result<MetricsUrl, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--metrics-url must start with http:// (got {url})"))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if !super::is_loopback_url(&format!("ws://{authority}/")) {
        return Err(format!(
            "--metrics-url must be on a loopback address (got {url})"
        ));
    }
    let has_port = match authority.strip_prefix('[') {
        Some(v6) => v6.contains("]:"),
        None => authority.contains(':'),
    };
    let authority = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok(MetricsUrl { authority, path })
}

/// Fetches the exposition text (HTTP status 200 only).
pub(crate) fn fetch(url: &MetricsUrl) -> Result<String, String> {
    let addr = url
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", url.authority))?
        .next()
        .ok_or_else(|| format!("{}: no address", url.authority))?;
    let mut stream = TcpStream::connect_timeout(&addr, SCRAPE_TIMEOUT)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(SCRAPE_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(SCRAPE_TIMEOUT)))
        .map_err(|e| format!("socket: {e}"))?;
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
        url.path, url.authority
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    stream
        .take(MAX_RESPONSE_BYTES)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    parse_response(&raw)
}

/// The body of a raw HTTP/1.x response, if its status is 200 (chunked or not).
pub(crate) fn parse_response(raw: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("the response has no header end")?;
    let status = head.lines().next().unwrap_or("");
    let code = status.split_whitespace().nth(1).unwrap_or("");
    if code != "200" {
        return Err(format!("HTTP status {status:?}"));
    }
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
        })
    });
    if chunked {
        dechunk(body)
    } else {
        Ok(body.to_string())
    }
}

fn dechunk(mut body: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size_line, rest) = body.split_once("\r\n").ok_or("truncated chunk size")?;
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("bad chunk size {size_hex:?}"))?;
        if size == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..size).ok_or("truncated chunk")?;
        out.push_str(chunk);
        body = rest[size..]
            .strip_prefix("\r\n")
            .ok_or("chunk without CRLF")?;
    }
}

/// Series name and its labels (sorted by name), as parsed.
type SeriesKey = (String, Vec<(String, String)>);

/// The samples of one scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scrape {
    samples: HashMap<SeriesKey, f64>,
}

impl Scrape {
    /// Parses Prometheus text format; comments and lines it cannot read are skipped.
    pub(crate) fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(parse_sample)
            .collect();
        Scrape { samples }
    }

    /// The value of `name` with exactly these labels.
    pub(crate) fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut key: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        key.sort();
        self.samples.get(&(name.to_string(), key)).copied()
    }

    /// `(upper bound, cumulative count)` of histogram `name` with `labels` (plus
    /// `le`), sorted by bound; `+Inf` is `f64::INFINITY`.
    fn buckets(&self, name: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
        let bucket = format!("{name}_bucket");
        let mut want: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        want.sort();
        let mut out: Vec<(f64, f64)> = self
            .samples
            .iter()
            .filter(|((n, _), _)| *n == bucket)
            .filter_map(|((_, l), v)| {
                let le = l.iter().find(|(k, _)| k == "le")?;
                let mut rest: Vec<(String, String)> =
                    l.iter().filter(|(k, _)| k != "le").cloned().collect();
                rest.sort();
                (rest == want).then_some((parse_value(&le.1)?, *v))
            })
            .collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

fn parse_value(v: &str) -> Option<f64> {
    match v {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => v.parse().ok(),
    }
}

/// One sample line: `name{a="x",b="y"} value [timestamp]`.
fn parse_sample(line: &str) -> Option<(SeriesKey, f64)> {
    let (name, labels, rest) = match line.find('{') {
        Some(open) => {
            let close = open + line[open..].find('}')?;
            (
                &line[..open],
                parse_labels(&line[open + 1..close])?,
                &line[close + 1..],
            )
        }
        None => {
            let (name, rest) = line.split_once(char::is_whitespace)?;
            (name, Vec::new(), rest)
        }
    };
    let value = parse_value(rest.split_whitespace().next()?)?;
    Some(((name.trim().to_string(), labels), value))
}

/// `a="x",b="y"` (no escaped quotes or commas inside values: none of the
/// series read here has them), sorted by name.
fn parse_labels(s: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=')?;
        let v = v.trim().strip_prefix('"')?.strip_suffix('"')?;
        out.push((k.trim().to_string(), v.to_string()));
    }
    out.sort();
    Some(out)
}

/// A quantile of the observations between two scrapes of a cumulative
/// histogram, interpolated linearly inside its bucket (as Prometheus'
/// `histogram_quantile`); in the `+Inf` bucket it is the last finite bound (a
/// lower bound). `None` when nothing was observed in between.
pub(crate) fn quantile_between(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> Option<f64> {
    let prior: HashMap<u64, f64> = before.iter().map(|(b, c)| (b.to_bits(), *c)).collect();
    let deltas: Vec<(f64, f64)> = after
        .iter()
        .map(|(b, c)| (*b, c - prior.get(&b.to_bits()).copied().unwrap_or(0.0)))
        .collect();
    let total = deltas.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, cum) in &deltas {
        if cum >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let in_bucket = cum - lower.1;
            let share = if in_bucket > 0.0 {
                (rank - lower.1) / in_bucket
            } else {
                1.0
            };
            return Some(lower.0 + (bound - lower.0) * share);
        }
        lower = (bound, cum);
    }
    None
}

/// p50 and p95 of a histogram's observations over a step, in ms.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct WaitMs {
    /// Observations in the step.
    pub(crate) count: u64,
    /// Median, ms.
    pub(crate) p50: f64,
    /// 95th percentile, ms.
    pub(crate) p95: f64,
}

/// What the server's counters show over one step (each `None` when the series
/// is absent).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub(crate) struct StepMetrics {
    /// Smart Turn analyses' wait for the executor thread.
    pub(crate) smart_turn_wait_ms: Option<WaitMs>,
    /// Smart Turn analyses' run time (features + model).
    pub(crate) smart_turn_run_ms: Option<WaitMs>,
    /// VAD batch jobs' wait for a pool thread.
    pub(crate) vad_wait_ms: Option<WaitMs>,
    /// Smart Turn analyses that gave a verdict.
    pub(crate) smart_turn_verdicts: Option<u64>,
    /// Analyses refused (queue full).
    pub(crate) smart_turn_refused: Option<u64>,
    /// Analyses not started before their deadline.
    pub(crate) smart_turn_timed_out: Option<u64>,
    /// Analyses cancelled before they started (their call no longer needed them).
    pub(crate) smart_turn_cancelled: Option<u64>,
    /// VAD windows refused at submit.
    pub(crate) vad_windows_rejected: Option<u64>,
    /// Caller frames dropped because a call fell behind.
    pub(crate) input_frames_dropped: Option<u64>,
    /// Calls refused (server full or draining).
    pub(crate) calls_refused: Option<u64>,
}

impl StepMetrics {
    /// The changes between two scrapes.
    pub(crate) fn between(before: &Scrape, after: &Scrape) -> StepMetrics {
        let count = |name: &str, labels: &[(&str, &str)]| {
            let a = after.get(name, labels)?;
            let b = before.get(name, labels).unwrap_or(0.0);
            Some((a - b).max(0.0).round() as u64)
        };
        let sum = |parts: &[Option<u64>]| parts.iter().copied().sum::<Option<u64>>();
        let wait = |name: &str, pool: &str| {
            let labels = [("pool", pool)];
            let (b, a) = (before.buckets(name, &labels), after.buckets(name, &labels));
            let seen = a.last()?.1 - b.last().map_or(0.0, |x| x.1);
            Some(WaitMs {
                count: seen.max(0.0).round() as u64,
                p50: quantile_between(&b, &a, 0.50)? * 1000.0,
                p95: quantile_between(&b, &a, 0.95)? * 1000.0,
            })
        };
        let analyses = "brisvox_smart_turn_analyses_total";
        StepMetrics {
            smart_turn_wait_ms: wait("brisvox_model_wait_seconds", "smart_turn"),
            smart_turn_run_ms: wait("brisvox_model_run_seconds", "smart_turn"),
            vad_wait_ms: wait("brisvox_model_wait_seconds", "vad"),
            smart_turn_verdicts: sum(&[
                count(analyses, &[("result", "complete")]),
                count(analyses, &[("result", "incomplete")]),
            ]),
            smart_turn_refused: count(analyses, &[("result", "refused")]),
            smart_turn_timed_out: count(analyses, &[("result", "timed_out")]),
            smart_turn_cancelled: count(
                "brisvox_model_jobs_total",
                &[("pool", "smart_turn"), ("outcome", "cancelled")],
            ),
            vad_windows_rejected: count("brisvox_vad_windows_total", &[("result", "rejected")]),
            input_frames_dropped: count("brisvox_input_frames_dropped_total", &[]),
            // `pool_pressure` and `smart_turn_pressure` are reasons of their
            // own since 2026-12-01; older servers counted the first as
            // `server_full` and had no second.
            calls_refused: sum(&[
                count("brisvox_calls_refused_total", &[("reason", "server_full")]),
                count(
                    "brisvox_calls_refused_total",
                    &[("reason", "server_draining")],
                ),
            ])
            .map(|n| {
                n + ["pool_pressure", "smart_turn_pressure"]
                    .iter()
                    .filter_map(|r| count("brisvox_calls_refused_total", &[("reason", r)]))
                    .sum::<u64>()
            }),
        }
    }
}

/// The step's record of the scrapes.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct StepScrape {
    /// The deltas, when both scrapes worked.
    pub(crate) metrics: Option<StepMetrics>,
    /// Why there are none (a scrape failed).
    pub(crate) error: Option<String>,
}

impl StepScrape {
    /// From the results of the scrapes before and after a step.
    pub(crate) fn of(before: Result<Scrape, String>, after: Result<Scrape, String>) -> StepScrape {
        match (before, after) {
            (Ok(b), Ok(a)) => StepScrape {
                metrics: Some(StepMetrics::between(&b, &a)),
                error: None,
            },
            (Err(e), _) | (_, Err(e)) => StepScrape {
                metrics: None,
                error: Some(e),
            },
        }
    }
}

/// Scrapes once, parsed.
pub(crate) fn scrape(url: &MetricsUrl) -> Result<Scrape, String> {
    fetch(url).map(|t| Scrape::parse(&t))
}

/// The report's cells: Smart Turn "verdicts / wait p50 / p95", VAD wait
/// "p50 / p95", and "refused / timed out / cancelled; VAD refused; frames
/// dropped"; "-" for what is not known.
pub(crate) fn cells(m: Option<&StepMetrics>) -> [String; 3] {
    let Some(m) = m else {
        return ["-".into(), "-".into(), "-".into()];
    };
    let n = |x: Option<u64>| x.map_or("-".to_string(), |x| x.to_string());
    let w =
        |x: Option<WaitMs>| x.map_or("-".to_string(), |w| format!("{:.1} / {:.1}", w.p50, w.p95));
    let turn = match m.smart_turn_wait_ms {
        Some(_) => format!("{} / {}", n(m.smart_turn_verdicts), w(m.smart_turn_wait_ms)),
        None => "-".into(),
    };
    let lost = format!(
        "{} / {} / {}; {}; {}",
        n(m.smart_turn_refused),
        n(m.smart_turn_timed_out),
        n(m.smart_turn_cancelled),
        n(m.vad_windows_rejected),
        n(m.input_frames_dropped)
    );
    [turn, w(m.vad_wait_ms), lost]
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# HELP brisvox_model_wait_seconds wait
# TYPE brisvox_model_wait_seconds histogram
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="0.01"} 10
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="0.1"} 10
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="1"} 10
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="+Inf"} 10
brisvox_model_wait_seconds_bucket{pool="vad",le="0.01"} 100
brisvox_model_wait_seconds_bucket{pool="vad",le="+Inf"} 100
brisvox_smart_turn_analyses_total{result="complete"} 8
brisvox_smart_turn_analyses_total{result="incomplete"} 2
brisvox_smart_turn_analyses_total{result="refused"} 0
brisvox_smart_turn_analyses_total{result="timed_out"} 1
brisvox_model_jobs_total{pool="smart_turn",outcome="cancelled"} 0
brisvox_input_frames_dropped_total 5
brisvox_calls_refused_total{reason="server_full"} 0
brisvox_calls_refused_total{reason="server_draining"} 0
"#;

    const AFTER: &str = r#"brisvox_model_wait_seconds_bucket{le="0.01",pool="smart_turn"} 30
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="0.1"} 100
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="1"} 110
brisvox_model_wait_seconds_bucket{pool="smart_turn",le="+Inf"} 110
brisvox_model_wait_seconds_bucket{pool="vad",le="0.01"} 300
brisvox_model_wait_seconds_bucket{pool="vad",le="+Inf"} 300
brisvox_smart_turn_analyses_total{result="complete"} 90
brisvox_smart_turn_analyses_total{result="incomplete"} 20
brisvox_smart_turn_analyses_total{result="refused"} 3
brisvox_smart_turn_analyses_total{result="timed_out"} 1
brisvox_model_jobs_total{pool="smart_turn",outcome="cancelled"} 4
brisvox_input_frames_dropped_total 5
brisvox_calls_refused_total{reason="server_full"} 2
brisvox_calls_refused_total{reason="server_draining"} 0
"#;

    #[test]
    fn deltas_and_quantiles_come_from_the_two_scrapes() {
        let m = StepMetrics::between(&Scrape::parse(BEFORE), &Scrape::parse(AFTER));
        // 100 new waits: 20 up to 10 ms, 70 in (10, 100] ms, 10 in (100, 1000] ms.
        let w = m.smart_turn_wait_ms.unwrap();
        assert_eq!(w.count, 100);
        // Rank 50 lies 30 of 70 into the (10, 100] bucket.
        assert!((w.p50 - (10.0 + 90.0 * 30.0 / 70.0)).abs() < 1e-9, "{w:?}");
        // Rank 95 lies 5 of 10 into the (100, 1000] bucket.
        assert!((w.p95 - 550.0).abs() < 1e-9, "{w:?}");
        assert_eq!(m.smart_turn_verdicts, Some(100));
        assert_eq!(m.smart_turn_refused, Some(3));
        assert_eq!(m.smart_turn_timed_out, Some(0));
        assert_eq!(m.smart_turn_cancelled, Some(4));
        assert_eq!(m.input_frames_dropped, Some(0));
        assert_eq!(m.calls_refused, Some(2));
        let v = m.vad_wait_ms.unwrap();
        assert_eq!(v.count, 200);
        assert!(v.p95 <= 10.0);
        // Absent series are unknown, not zero.
        assert_eq!(m.vad_windows_rejected, None);
        assert_eq!(m.smart_turn_run_ms, None);
        let [turn, vad, lost] = cells(Some(&m));
        assert_eq!(turn, "100 / 48.6 / 550.0");
        assert_eq!(vad, format!("{:.1} / {:.1}", v.p50, v.p95));
        assert_eq!(lost, "3 / 0 / 4; -; 0");
    }

    #[test]
    fn a_quantile_in_the_open_bucket_is_the_last_finite_bound() {
        let before = [(0.1, 0.0), (f64::INFINITY, 0.0)];
        let after = [(0.1, 1.0), (f64::INFINITY, 10.0)];
        assert_eq!(quantile_between(&before, &after, 0.95), Some(0.1));
        assert_eq!(quantile_between(&before, &before, 0.5), None);
        assert_eq!(quantile_between(&[], &[], 0.5), None);
    }

    #[test]
    fn a_server_without_the_series_gives_dashes() {
        let m = StepMetrics::between(&Scrape::default(), &Scrape::parse("up 1\n"));
        assert_eq!(m, StepMetrics::default());
        assert_eq!(cells(None), ["-", "-", "-"]);
        let failed = StepScrape::of(Err("connect: refused".into()), Ok(Scrape::default()));
        assert!(failed.metrics.is_none());
        assert_eq!(failed.error.as_deref(), Some("connect: refused"));
    }

    #[test]
    fn urls_must_be_http_on_loopback() {
        assert_eq!(
            parse_url("http://127.0.0.1:8080/metrics?token=x").unwrap(),
            MetricsUrl {
                authority: "127.0.0.1:8080".into(),
                path: "/metrics?token=x".into()
            }
        );
        assert_eq!(
            parse_url("http://localhost").unwrap().authority,
            "localhost:80"
        );
        assert_eq!(parse_url("http://[::1]:9/m").unwrap().authority, "[::1]:9");
        assert_eq!(parse_url("http://[::1]/m").unwrap().authority, "[::1]:80");
        assert!(parse_url("https://127.0.0.1/metrics").is_err());
        assert!(parse_url("http://10.0.0.1:8080/metrics").is_err());
    }

    #[test]
    fn responses_are_read_plain_or_chunked() {
        let plain = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nup 1\n";
        assert_eq!(parse_response(plain).unwrap(), "up 1\n");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nup \r\n2\r\n1\n\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), "up 1\n");
        let missing = b"HTTP/1.1 404 Not Found\r\n\r\nno";
        assert!(parse_response(missing).unwrap_err().contains("404"));
        assert!(parse_response(b"garbage").is_err());
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(parse_response(bad).is_err());
    }

    #[test]
    fn a_live_endpoint_is_scraped_and_a_closed_port_is_an_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            assert!(String::from_utf8_lossy(&buf[..n]).starts_with("GET /metrics HTTP/1.0"));
            s.write_all(b"HTTP/1.0 200 OK\r\n\r\nbrisvox_input_frames_dropped_total 7\n")
                .unwrap();
        });
        let url = parse_url(&format!("http://127.0.0.1:{port}/metrics")).unwrap();
        let got = scrape(&url).unwrap();
        server.join().unwrap();
        assert_eq!(
            got.get("brisvox_input_frames_dropped_total", &[]),
            Some(7.0)
        );
        // The listener is gone: the port refuses.
        assert!(scrape(&url).is_err());
    }
}
