//! `brisvox-bench`: measurements whose results are committed under `bench/results/`.
//!
//! Each subcommand writes a markdown report that starts with the command that
//! produced it and the machine it ran on.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        _ => {
            eprintln!("usage: brisvox-bench <subcommand> [options]\n\nsubcommands: (none yet)");
            std::process::exit(2);
        }
    }
}
