//! Resource readings of a server process tree from /proc, sampled on a thread of
//! its own every 500 ms: CPU time (utime + stime of each process, which already
//! includes all its threads; /proc lists processes, not threads, so nothing is
//! counted twice), RSS (VmRSS) and PSS (smaps_rollup, needs permission to read the
//! process) summed over the root and all its descendants.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Linux's USER_HZ on every mainstream architecture: /proc CPU times are in 1/100 s.
const TICKS_PER_SECOND: f64 = 100.0;

/// Sampling period.
pub(crate) const PERIOD: Duration = Duration::from_millis(500);

/// One reading of the tree.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Reading {
    /// Seconds since the sampler started.
    pub(crate) at_s: f64,
    /// CPU ticks (utime + stime) summed over the tree.
    pub(crate) cpu_ticks: u64,
    /// VmRSS summed over the tree, KiB.
    pub(crate) rss_kib: u64,
    /// Pss summed over the tree, KiB; `None` if any process could not be read.
    pub(crate) pss_kib: Option<u64>,
    /// Processes in the tree.
    pub(crate) processes: usize,
}

/// Summary of the readings of one step.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct ProbeSummary {
    /// CPU seconds per wall second between the first and the last reading.
    pub(crate) cpu_cores: f64,
    /// RSS at the first reading, MB (10^6 bytes).
    pub(crate) rss_before_mb: f64,
    /// Largest RSS, MB.
    pub(crate) rss_peak_mb: f64,
    /// PSS at the first reading, MB.
    pub(crate) pss_before_mb: Option<f64>,
    /// Largest PSS, MB.
    pub(crate) pss_peak_mb: Option<f64>,
    /// Largest number of processes in the tree.
    pub(crate) processes: usize,
    /// Readings taken.
    pub(crate) readings: usize,
}

/// Parses `/proc/PID/stat`: (ppid, utime + stime). The command name may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<(u32, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// A `Key:   123 kB` line's number from /proc status-like text.
pub(crate) fn parse_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
        .and_then(|l| l[key.len() + 1..].split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The root and its descendants, from a pid -> ppid map.
pub(crate) fn tree(root: u32, parents: &HashMap<u32, u32>) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        let mut kids: Vec<u32> = parents
            .iter()
            .filter(|&(_, &pp)| pp == p)
            .map(|(&c, _)| c)
            .collect();
        kids.sort_unstable();
        out.extend(kids.into_iter().filter(|c| *c != root));
        i += 1;
    }
    out
}

fn read(pid: u32, what: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/{what}")).ok()
}

/// Reads the tree of `root` once.
pub(crate) fn read_tree(root: u32, at_s: f64) -> Option<Reading> {
    let mut parents = HashMap::new();
    let mut ticks = HashMap::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, t)) = read(pid, "stat").as_deref().and_then(parse_stat) {
            parents.insert(pid, ppid);
            ticks.insert(pid, t);
        }
    }
    if !ticks.contains_key(&root) {
        return None;
    }
    let pids = tree(root, &parents);
    let mut r = Reading {
        at_s,
        processes: pids.len(),
        pss_kib: Some(0),
        ..Reading::default()
    };
    for pid in pids {
        r.cpu_ticks += ticks.get(&pid).copied().unwrap_or(0);
        r.rss_kib += read(pid, "status")
            .and_then(|s| parse_kib(&s, "VmRSS"))
            .unwrap_or(0);
        let pss = read(pid, "smaps_rollup").and_then(|s| parse_kib(&s, "Pss"));
        r.pss_kib = r.pss_kib.zip(pss).map(|(a, b)| a + b);
    }
    Some(r)
}

/// Summarises the readings of a step.
pub(crate) fn summarize(readings: &[Reading]) -> Option<ProbeSummary> {
    let (first, last) = (readings.first()?, readings.last()?);
    let wall = last.at_s - first.at_s;
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    Some(ProbeSummary {
        cpu_cores: if wall > 0.0 {
            last.cpu_ticks.saturating_sub(first.cpu_ticks) as f64 / TICKS_PER_SECOND / wall
        } else {
            0.0
        },
        rss_before_mb: mb(first.rss_kib),
        rss_peak_mb: mb(readings.iter().map(|r| r.rss_kib).max().unwrap_or(0)),
        pss_before_mb: first.pss_kib.map(mb),
        pss_peak_mb: readings
            .iter()
            .map(|r| r.pss_kib)
            .collect::<Option<Vec<_>>>()
            .map(|v| mb(v.into_iter().max().unwrap_or(0))),
        processes: readings.iter().map(|r| r.processes).max().unwrap_or(0),
        readings: readings.len(),
    })
}

/// A sampler thread; `stop` returns its readings.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<Reading>>,
}

impl Sampler {
    /// Starts sampling the tree of `root` every [`PERIOD`].
    pub(crate) fn start(root: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut out = Vec::new();
            loop {
                if let Some(r) = read_tree(root, t0.elapsed().as_secs_f64()) {
                    out.push(r);
                }
                if flag.load(Ordering::Acquire) {
                    return out;
                }
                std::thread::sleep(PERIOD);
            }
        });
        Sampler { stop, handle }
    }

    /// Stops the thread (after one last reading) and returns the readings.
    pub(crate) fn stop(self) -> Vec<Reading> {
        self.stop.store(true, Ordering::Release);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (tokio (rt) x) S 17 4242 4242 0 -1 4194560 500 0 0 0 123 45 0 0 20 0 9 0 100 1000 200";
        assert_eq!(parse_stat(line), Some((17, 168)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn kib_lines_are_read_by_exact_key() {
        let status = "VmHWM:\t  9000 kB\nVmRSS:\t  8000 kB\n";
        assert_eq!(parse_kib(status, "VmRSS"), Some(8000));
        let rollup = "00400000-7fff [rollup]\nRss:  700 kB\nPss:  600 kB\nPss_Anon:  500 kB\n";
        assert_eq!(parse_kib(rollup, "Pss"), Some(600));
        assert_eq!(parse_kib(rollup, "Swap"), None);
    }

    #[test]
    fn the_tree_holds_descendants_only() {
        let parents: HashMap<u32, u32> = [(10, 1), (11, 10), (12, 10), (13, 11), (20, 1)]
            .into_iter()
            .collect();
        assert_eq!(tree(10, &parents), vec![10, 11, 12, 13]);
        assert_eq!(tree(20, &parents), vec![20]);
    }

    #[test]
    fn cpu_is_ticks_over_wall_time() {
        let r = |at_s, cpu_ticks, rss_kib| Reading {
            at_s,
            cpu_ticks,
            rss_kib,
            pss_kib: None,
            processes: 1,
        };
        let s = summarize(&[r(0.0, 100, 1000), r(0.5, 150, 3000), r(1.0, 200, 2000)]).unwrap();
        assert!((s.cpu_cores - 1.0).abs() < 1e-9);
        assert!((s.rss_peak_mb - 3.072).abs() < 1e-9);
        assert_eq!(s.pss_peak_mb, None);
    }

    #[test]
    fn this_process_can_be_read() {
        let r = read_tree(std::process::id(), 0.0).expect("own /proc entry");
        assert!(r.rss_kib > 0);
        assert!(r.processes >= 1);
    }
}
