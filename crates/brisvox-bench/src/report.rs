//! A markdown report whose first lines say how and where it was produced.

use std::fmt::Write as _;
use std::path::Path;

/// A report: the header (command, machine, build, date) and sections.
pub(crate) struct Report {
    text: String,
}

impl Report {
    /// Starts a report titled `title` with the provenance header.
    pub(crate) fn new(title: &str) -> Self {
        let mut text = String::new();
        let command: Vec<String> = std::env::args().collect();
        let _ = writeln!(text, "# {title}\n");
        let _ = writeln!(text, "- command: `{}`", command.join(" "));
        let _ = writeln!(text, "- machine: {}", machine());
        let _ = writeln!(
            text,
            "- build: {} (debug assertions {})",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            if cfg!(debug_assertions) { "on" } else { "off" }
        );
        let _ = writeln!(text, "- date: {}", utc_now());
        let _ = writeln!(text, "- load average at start: {}", load_average());
        let _ = writeln!(
            text,
            "- ONNX Runtime: onnxruntime 1.32.0 (the pinned wheel's library, via `ort` 2.0.0-rc.15, load-dynamic)\n"
        );
        Report { text }
    }

    /// Appends a markdown section.
    pub(crate) fn section(&mut self, markdown: String) {
        self.text.push_str(&markdown);
        if !self.text.ends_with("\n\n") {
            self.text.push('\n');
        }
    }

    /// Writes the report, creating the folder.
    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, &self.text)
    }
}

/// CPU model, logical cores, kernel.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_owned();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    format!("{model}, {cores} logical cores available, Linux {kernel}")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC` (civil-from-days, no crate).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}
