//! The `brisvox` binary.

fn main() {
    eprintln!("brisvox: no subcommands yet");
    std::process::exit(2);
}
