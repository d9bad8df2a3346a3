//! `brisvox-afl TARGET`: one brisvox-fuzz harness under AFL++ (build with
//! `cargo afl build --release`; run by `scripts/fuzz-campaign.sh`).

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = brisvox_fuzz::target(&name) else {
        let names: Vec<&str> = brisvox_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: brisvox-afl TARGET, one of: {}", names.join(", "));
        std::process::exit(2);
    };
    let run = target.run;
    afl::fuzz!(|data: &[u8]| {
        run(data);
    });
}
