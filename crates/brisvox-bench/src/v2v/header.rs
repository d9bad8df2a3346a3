//! The header every results file starts with: command, machine, build profile and
//! date. Uses `scripts/bench-header.sh` when it can be found (the same lines as
//! the other benchmarks), and reads the same facts from /proc otherwise.

use std::path::PathBuf;
use std::process::Command;

/// Build profile of this binary.
pub(crate) fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The command line as typed, arguments quoted when they contain spaces.
pub(crate) fn command_line() -> String {
    std::env::args()
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Header lines (markdown list items).
pub(crate) fn header_lines() -> Vec<String> {
    let command = command_line();
    if let Some(script) = find_script() {
        let out = Command::new("bash")
            .arg(&script)
            .arg(profile())
            .arg(&command)
            .output();
        if let Ok(out) = out
            && out.status.success()
        {
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            if !lines.is_empty() {
                return lines;
            }
        }
    }
    native_header(&command)
}

fn find_script() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("scripts/bench-header.sh"),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/bench-header.sh"),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

fn native_header(command: &str) -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |s| s.trim().to_string());
    // The machine's cores, not the ones this process is pinned to.
    let cores = read("/proc/cpuinfo")
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let kernel = format!(
        "{} {}",
        read("/proc/sys/kernel/ostype").trim(),
        read("/proc/sys/kernel/osrelease").trim()
    );
    let load: Vec<&str> = Vec::new();
    let loadavg = read("/proc/loadavg");
    let load = if loadavg.is_empty() {
        load
    } else {
        loadavg.split_whitespace().take(3).collect()
    };
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    vec![
        format!("- command: `{command}`"),
        format!("- machine: {cpu}, {cores} cores, {kernel}"),
        format!("- load average at start: {}", load.join(" ")),
        format!("- build profile: {}", profile()),
        format!("- date: {} (Unix seconds)", secs),
    ]
}
