//! `brisvox-bench`: measurements whose results are committed under `bench/results/`.
//!
//! Each subcommand writes a markdown report that starts with the command that
//! produced it and the machine it ran on.
//!
//! ```text
//! brisvox-bench model-cpu [--seconds S] [--rounds N] [--streams 1,10,100,500]
//!                         [--smart-turn-runs N] [--options-runs N] [--only SECTION]
//!                         [--out bench/results/model-cpu.md] [--compare-model PATH]
//! ```

mod alloc_count;
mod capacity;
mod cpu;
mod flood;
mod lossy_proxy;
mod model_cpu;
mod model_cpu_paced;
mod model_cpu_profile;
mod model_cpu_smart_turn;
mod model_cpu_smart_turn_options;
mod quality;
mod report;
mod sim_load;
mod soak;
mod v2v;

use std::path::PathBuf;

/// Counts Rust heap use, for memory per stream and allocations per window.
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

use model_cpu::SileroBenchOptions;
use report::Report;

const USAGE: &str = "usage: brisvox-bench <subcommand> [options]

subcommands:
  model-cpu   CPU and wall time per model call (Silero VAD windows, unbatched and
              batched; Smart Turn analyses) and memory per stream
              --seconds S        seconds per configuration per round (default 1.0)
              --rounds N         interleaved rounds (default 3)
              --streams LIST     stream counts, comma-separated (default 1,10,100,500)
              --smart-turn-runs N  runs per Smart Turn configuration (default 15)
              --options-runs N   runs per ONNX Runtime session option of the
                                 Smart Turn sweep (default 40)
              --only SECTION     one section: silero, silero-paced (the VAD service
                                 paced, linger policies side by side),
                                 silero-inline (the If on sr inlined or not),
                                 silero-native (Silero in Rust beside ONNX Runtime),
                                 smart-turn or smart-turn-options
              --out PATH         report file (default bench/results/model-cpu.md)
              --compare-model PATH  also measure another Silero model file
  v2v         voice-to-voice latency over the websocket or WebRTC (brisvox-bench v2v --help)
  capacity    concurrent calls within a p95 V2V limit (brisvox-bench capacity --help)
  sim-load    N simulated calls in one process, mock providers (brisvox-bench sim-load --help)
  quality     conversation quality on recorded speech: premature ends, missed turns,
              barge-ins, backchannels (brisvox-bench quality --help)
  soak        N calls at once for M minutes, sampled every minute (brisvox-bench soak --help)
  flood       idle websockets, slow request heads and handshake floods while calls go on (brisvox-bench flood --help)
  lossy-proxy a seeded lossy UDP link in front of a port range, for the browser's loss test
              (brisvox-bench lossy-proxy --help)";

/// The sections of `model-cpu` that `--only` can pick.
const SECTIONS: [&str; 6] = [
    "silero",
    "silero-paced",
    "silero-inline",
    "silero-native",
    "smart-turn",
    "smart-turn-options",
];

/// Options of `model-cpu`.
struct ModelCpuArgs {
    silero: SileroBenchOptions,
    /// Runs per Smart Turn configuration (read by the Smart Turn section).
    smart_turn_runs: usize,
    /// Runs per session option of the Smart Turn sweep.
    options_runs: usize,
    /// Only this section (one of [`SECTIONS`]); all when `None`.
    only: Option<String>,
    out: PathBuf,
}

fn parse_model_cpu(args: &[String]) -> Result<ModelCpuArgs, String> {
    let mut parsed = ModelCpuArgs {
        silero: SileroBenchOptions {
            seconds: 1.0,
            rounds: 3,
            streams: vec![1, 10, 100, 500],
            compare_model: None,
        },
        smart_turn_runs: 15,
        options_runs: 40,
        only: None,
        out: PathBuf::from("bench/results/model-cpu.md"),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let bad = |v: &str| format!("bad value for {flag}: {v}");
        match flag.as_str() {
            "--seconds" => {
                let v = value()?;
                parsed.silero.seconds = v.parse().map_err(|_| bad(&v))?;
            }
            "--rounds" => {
                let v = value()?;
                parsed.silero.rounds = v.parse().map_err(|_| bad(&v))?;
            }
            "--streams" => {
                let v = value()?;
                parsed.silero.streams = v
                    .split(',')
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad(&v))?;
            }
            "--smart-turn-runs" => {
                let v = value()?;
                parsed.smart_turn_runs = v.parse().map_err(|_| bad(&v))?;
            }
            "--options-runs" => {
                let v = value()?;
                parsed.options_runs = v.parse().map_err(|_| bad(&v))?;
            }
            "--only" => {
                let v = value()?;
                if !SECTIONS.contains(&v.as_str()) {
                    return Err(bad(&v));
                }
                parsed.only = Some(v);
            }
            "--out" => parsed.out = PathBuf::from(value()?),
            "--compare-model" => parsed.silero.compare_model = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other}\n\n{USAGE}")),
        }
    }
    parsed.silero.rounds = parsed.silero.rounds.max(1);
    parsed.silero.streams.retain(|&n| n > 0);
    Ok(parsed)
}

fn model_cpu(args: &[String]) -> Result<(), String> {
    let opts = parse_model_cpu(args)?;
    let mut report = Report::new("Model CPU per call");
    let run = |section: &str| opts.only.as_deref().is_none_or(|only| only == section);
    if run("silero") {
        report.section(model_cpu::silero_section(&opts.silero)?);
        report.section(model_cpu_profile::silero_profile(100, 30)?);
    }
    if run("silero-paced") {
        report.section(model_cpu_paced::silero_paced_section(&opts.silero)?);
    }
    if run("silero-inline") {
        report.section(model_cpu::silero_inline_section(&opts.silero)?);
    }
    if run("silero-native") {
        report.section(model_cpu::silero_native_section(&opts.silero)?);
    }

    // ---- Smart Turn section ------------------------------------------------------
    // The Smart Turn measurements (crates/brisvox-bench/src/model_cpu_smart_turn.rs)
    // add their section here: a `mod model_cpu_smart_turn;` line at the top and
    //     report.section(model_cpu_smart_turn::smart_turn_section(opts.smart_turn_runs)?);
    // ------------------------------------------------------------------------------
    if run("smart-turn") {
        report.section(model_cpu_smart_turn::smart_turn_section(
            opts.smart_turn_runs,
        )?);
    }
    if run("smart-turn-options") {
        report.section(model_cpu_smart_turn_options::smart_turn_options_section(
            opts.options_runs,
        )?);
    }

    report
        .write(&opts.out)
        .map_err(|e| format!("{}: {e}", opts.out.display()))?;
    eprintln!("model-cpu: wrote {}", opts.out.display());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("model-cpu") => model_cpu(&args[1..]),
        Some("v2v") => v2v::main(&args[1..]),
        Some("capacity") => capacity::main(&args[1..]),
        Some("sim-load") => sim_load::main(&args[1..]),
        Some("quality") => quality::main(&args[1..]),
        Some("soak") => soak::main(&args[1..]),
        Some("flood") => flood::main(&args[1..]),
        Some("lossy-proxy") => lossy_proxy::main(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("brisvox-bench: {e}");
        std::process::exit(1);
    }
}
