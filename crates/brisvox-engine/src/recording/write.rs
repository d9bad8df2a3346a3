//! Writing a [`Recording`] to a directory: `<call>-<start>.wav` and
//! `<call>-<start>.json`, each written to a `.part` file first and renamed
//! when whole, so a reader never sees half a recording. Any failure (a full
//! disk, a missing directory, the directory's byte budget) removes what was
//! written and returns a [`RecordingError`]: the recording fails, the call
//! does not. Blocking file I/O: call it from a blocking thread.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Recording;

/// Why a recording was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// Writing failed (a full disk, permissions, a missing directory).
    #[error("writing {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The directory's byte budget would be exceeded.
    #[error(
        "recording of {needed_bytes} bytes would pass the directory budget ({used_bytes} of {budget_bytes} bytes used)"
    )]
    OverBudget {
        /// Bytes of recordings already in the directory.
        used_bytes: u64,
        /// Bytes this recording needs.
        needed_bytes: u64,
        /// The budget.
        budget_bytes: u64,
    },
}

/// Where a recording was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingFiles {
    /// The stereo WAV.
    pub wav: PathBuf,
    /// The JSON transcript.
    pub transcript: PathBuf,
}

/// Writes the WAV and the transcript into the two writers.
pub fn write_into(
    rec: &Recording,
    wav: &mut impl Write,
    json: &mut impl Write,
) -> std::io::Result<()> {
    wav.write_all(&rec.wav)?;
    wav.flush()?;
    // Cannot fail: strings, numbers and arrays only.
    let text = serde_json::to_vec_pretty(&rec.transcript).expect("a transcript always serialises");
    json.write_all(&text)?;
    json.flush()
}

/// Writes `rec` into `dir`, keeping the recordings there (`.wav` and
/// `.json` files) under `budget_bytes` when given.
pub fn write(
    dir: &Path,
    rec: &Recording,
    budget_bytes: Option<u64>,
) -> Result<RecordingFiles, RecordingError> {
    if let Some(budget) = budget_bytes {
        check_budget(dir, rec, budget)?;
    }
    let stem = format!(
        "{}-{}",
        file_stem(&rec.transcript.call_id),
        rec.transcript.started_unix_ms
    );
    let files = RecordingFiles {
        wav: dir.join(format!("{stem}.wav")),
        transcript: dir.join(format!("{stem}.json")),
    };
    let parts = [part_of(&files.wav), part_of(&files.transcript)];
    let result = write_parts(rec, &parts).and_then(|()| {
        rename(&parts[0], &files.wav)?;
        rename(&parts[1], &files.transcript)
    });
    if result.is_err() {
        for p in parts.iter().chain([&files.wav, &files.transcript]) {
            let _ = std::fs::remove_file(p);
        }
    }
    result.map(|()| files)
}

fn write_parts(rec: &Recording, parts: &[PathBuf; 2]) -> Result<(), RecordingError> {
    let create = |p: &PathBuf| {
        std::fs::File::create(p).map_err(|source| RecordingError::Io {
            path: p.clone(),
            source,
        })
    };
    let mut wav = std::io::BufWriter::new(create(&parts[0])?);
    let mut json = std::io::BufWriter::new(create(&parts[1])?);
    write_into(rec, &mut wav, &mut json).map_err(|source| RecordingError::Io {
        path: parts[0].parent().unwrap_or(Path::new(".")).to_owned(),
        source,
    })
}

fn rename(from: &Path, to: &Path) -> Result<(), RecordingError> {
    std::fs::rename(from, to).map_err(|source| RecordingError::Io {
        path: to.to_owned(),
        source,
    })
}

fn part_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".part");
    path.with_file_name(name)
}

fn check_budget(dir: &Path, rec: &Recording, budget_bytes: u64) -> Result<(), RecordingError> {
    let io = |source| RecordingError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut used_bytes = 0;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let ours = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("wav" | "json")
        );
        if ours {
            used_bytes += entry.metadata().map_err(io)?.len();
        }
    }
    // The transcript is small next to the audio; count 64 KiB for it.
    let needed_bytes = rec.wav.len() as u64 + 64 * 1024;
    if used_bytes + needed_bytes > budget_bytes {
        return Err(RecordingError::OverBudget {
            used_bytes,
            needed_bytes,
            budget_bytes,
        });
    }
    Ok(())
}

/// `call_id` as a safe file name: `[A-Za-z0-9._-]` kept, anything else `_`,
/// at most 100 characters, never empty or starting with a dot.
fn file_stem(call_id: &str) -> String {
    let mut s: String = call_id
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, 'c');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_become_safe_file_names() {
        assert_eq!(file_stem("CA123"), "CA123");
        assert_eq!(file_stem("v3:abc/../x"), "v3_abc_.._x");
        assert_eq!(file_stem(""), "c");
        assert_eq!(file_stem(".."), "c..");
    }
}
