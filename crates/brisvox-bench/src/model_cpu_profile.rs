//! Where a batched Silero run spends its time: ONNX Runtime's own per-node profile
//! of the shipped model, grouped by layer.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use brisvox_models::runtime;
use ort::value::TensorRef;

/// Runs `runs` batches of `rows` rows with ONNX Runtime's profiler on and returns a
/// markdown table of the share of the model's run time per layer group.
pub(crate) fn silero_profile(rows: usize, runs: usize) -> Result<String, String> {
    let err = |e: ort::Error| e.to_string();
    let dir = std::env::temp_dir().join(format!("brisvox-silero-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let model = runtime::find_model_file(runtime::SILERO_VAD_FILE).map_err(|e| e.to_string())?;
    let mut session = runtime::session_builder()
        .map_err(|e| e.to_string())?
        .with_intra_threads(1)
        .map_err(|e| err(e.into()))?
        .with_profiling(dir.join("silero"))
        .map_err(|e| err(e.into()))?
        .commit_from_file(&model)
        .map_err(err)?;
    let input: Vec<f32> = (0..rows * 576)
        .map(|i| ((i % 97) as f32 - 48.0) / 480.0)
        .collect();
    let state = vec![0.0f32; 2 * rows * 128];
    let sr = [16_000i64];
    for _ in 0..runs {
        let outputs = session
            .run(ort::inputs![
                TensorRef::from_array_view(([rows, 576], &input[..])).map_err(err)?,
                TensorRef::from_array_view(([2, rows, 128], &state[..])).map_err(err)?,
                TensorRef::from_array_view(((), &sr[..])).map_err(err)?,
            ])
            .map_err(err)?;
        std::hint::black_box(&outputs);
    }
    let file = session.end_profiling().map_err(err)?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    let events: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let events = events.as_array().ok_or("profile is not a JSON array")?;

    let mut total_us = 0.0;
    let mut groups: BTreeMap<&'static str, f64> = BTreeMap::new();
    for e in events {
        let dur = e["dur"].as_f64().unwrap_or(0.0);
        let name = e["name"].as_str().unwrap_or("");
        match e["cat"].as_str() {
            Some("Session") if name == "model_run" => total_us += dur,
            // An `If` node's time includes its branch's nodes, which are listed
            // themselves: count the leaves only.
            Some("Node") if name.ends_with("_kernel_time") && e["args"]["op_name"] != "If" => {
                *groups.entry(group_of(name)).or_default() += dur;
            }
            _ => {}
        }
    }
    if total_us <= 0.0 {
        return Err("the profile holds no model_run".to_owned());
    }
    let leaves: f64 = groups.values().sum();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\n### Where a batched run spends its time\n\nONNX Runtime's profiler (1 intra-op thread, default optimisation: all), \
         {runs} runs of {rows} rows ({:.1} us per row in these runs), \
         kernel time of the leaf nodes as a share of the whole run:\n",
        total_us / (runs * rows) as f64
    );
    let _ = writeln!(md, "| part of the model | share of run time |");
    let _ = writeln!(md, "|---|---|");
    let mut sorted: Vec<_> = groups.into_iter().collect();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (group, us) in sorted {
        let _ = writeln!(md, "| {group} | {:.1} % |", us / total_us * 100.0);
    }
    let _ = writeln!(
        md,
        "| outside the leaf kernels (the `If` nodes on `sr`, executor, input/output copies) | {:.1} % |",
        (total_us - leaves).max(0.0) / total_us * 100.0
    );
    Ok(md)
}

fn group_of(node: &str) -> &'static str {
    if node.contains("/stft/Conv") {
        "STFT as a convolution (Conv)"
    } else if node.contains("/stft/") {
        "STFT magnitude (pad, pow, sqrt, slice)"
    } else if node.contains("/encoder/0/") {
        "encoder conv 0"
    } else if node.contains("/encoder/1/") {
        "encoder conv 1"
    } else if node.contains("/encoder/") {
        "encoder convs 2-3"
    } else if node.contains("/rnn/LSTM") {
        "LSTM"
    } else if node.contains("/decoder/") {
        "decoder rest (conv, relu, shape ops)"
    } else {
        "other small ops"
    }
}
