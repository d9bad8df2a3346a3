//! `brisvox-bench sim-load`: N simulated calls in one process (issue #7).
//! Work in progress: the measurement lands in the next commits.

/// Runs `sim-load` with its arguments.
pub(crate) fn main(_args: &[String]) -> Result<(), String> {
    Err("sim-load: not implemented yet".to_owned())
}
