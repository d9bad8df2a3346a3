//! `brisvox-fuzz-seeds DIR`: writes each target's seeds to `DIR/<target>/`
//! (`seed-<n>`), the starting corpus of a campaign.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: brisvox-fuzz-seeds DIR");
        return ExitCode::FAILURE;
    };
    for target in brisvox_fuzz::TARGETS {
        let target_dir = dir.join(target.name);
        let written = std::fs::create_dir_all(&target_dir).and_then(|()| {
            let seeds = brisvox_fuzz::seeds::seeds(target.name);
            for (n, seed) in seeds.iter().enumerate() {
                std::fs::write(target_dir.join(format!("seed-{n}")), seed)?;
            }
            Ok(seeds.len())
        });
        match written {
            Ok(n) => println!("{}: {n} seeds", target.name),
            Err(e) => {
                eprintln!("brisvox-fuzz-seeds: {}: {e}", target_dir.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
