//! ONNX Runtime loads from the models folder without hand-set environment variables.

use brisvox_models::runtime;

#[test]
fn the_runtime_and_both_models_are_found_and_load() {
    let lib = match runtime::ort_library_path() {
        Ok(p) => p,
        Err(e) if !runtime::models_required() => {
            eprintln!("skipped (models not fetched, CI unset): {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(lib.exists(), "{}", lib.display());
    runtime::environment().expect("ONNX Runtime loads");
    for file in [runtime::SILERO_VAD_FILE, runtime::SMART_TURN_FILE] {
        let path = runtime::find_model_file(file).expect("model present");
        runtime::session_builder()
            .expect("session builder")
            .commit_from_file(&path)
            .unwrap_or_else(|e| panic!("{file} loads: {e}"));
    }
}
