//! Every target's seeds, its kept corpus (`fuzz/corpus/<target>/`, the
//! campaign's minimised queue) and the inputs that once crashed it
//! (`fuzz/crashes/<target>/`) go through its harness without a panic: the
//! fuzz campaigns replayed as a plain test, which CI runs without AFL.

use std::path::{Path, PathBuf};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus");
const CRASHES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/crashes");

/// Runs `input` through `target`; names the input when the harness panics.
fn replay(target: &brisvox_fuzz::Target, label: &str, input: &[u8]) {
    let run = target.run;
    if std::panic::catch_unwind(|| run(input)).is_err() {
        panic!(
            "{} panicked on {label} ({} bytes)",
            target.name,
            input.len()
        );
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/fuzz-campaign.sh)", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_target_passes_its_seeds() {
    for target in brisvox_fuzz::TARGETS {
        let seeds = brisvox_fuzz::seeds::seeds(target.name);
        assert!(!seeds.is_empty(), "{} has no seeds", target.name);
        for (n, seed) in seeds.iter().enumerate() {
            replay(target, &format!("seed {n}"), seed);
        }
    }
}

#[test]
fn every_target_passes_its_kept_corpus() {
    for target in brisvox_fuzz::TARGETS {
        let dir = Path::new(CORPUS).join(target.name);
        let inputs = files(&dir);
        assert!(
            !inputs.is_empty(),
            "{} is empty (run scripts/fuzz-campaign.sh)",
            dir.display()
        );
        for path in inputs {
            let input = std::fs::read(&path).expect("a readable corpus file");
            replay(target, &path.display().to_string(), &input);
        }
    }
}

#[test]
fn every_corpus_directory_belongs_to_a_target() {
    for dir in std::fs::read_dir(CORPUS).expect("fuzz/corpus exists") {
        let name = dir.expect("a readable entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            brisvox_fuzz::target(&name).is_some(),
            "fuzz/corpus/{name} has no target"
        );
    }
}

#[test]
fn every_kept_crash_is_fixed() {
    for target in brisvox_fuzz::TARGETS {
        let dir = Path::new(CRASHES).join(target.name);
        if !dir.exists() {
            continue;
        }
        for path in files(&dir) {
            let input = std::fs::read(&path).expect("a readable crash file");
            replay(target, &path.display().to_string(), &input);
        }
    }
}
