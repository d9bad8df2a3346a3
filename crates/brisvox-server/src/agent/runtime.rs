//! The `[runtime]` section: threads of the model executors and the size of
//! their queues. Each thread count can also be set from the environment
//! (the variable wins over the file, so one image serves machines of
//! different sizes); see `docs/OPERATIONS.md`.

use serde::{Deserialize, Serialize};

use super::AgentError;
use super::policy::range;
use super::providers::EnvLookup;

/// Overrides `runtime.vad_threads`.
pub const ENV_VAD_THREADS: &str = "BRISVOX_VAD_THREADS";
/// Overrides `runtime.smart_turn_threads`.
pub const ENV_SMART_TURN_THREADS: &str = "BRISVOX_SMART_TURN_THREADS";
/// Overrides `runtime.smart_turn_intra_threads`.
pub const ENV_SMART_TURN_INTRA_THREADS: &str = "BRISVOX_SMART_TURN_INTRA_THREADS";

/// Smallest waiting-job bound of a model queue.
pub const MIN_POOL_QUEUE: usize = 1024;

/// `[runtime]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeSettings {
    /// Threads of the VAD pool; 0: half the cores, at least one.
    pub vad_threads: u32,
    /// Longest a VAD batch waits for the windows of other calls, in ms, when
    /// the calls active lately will send at least two more windows meanwhile
    /// (the adaptive linger); 0: never wait.
    pub vad_linger_ms: u32,
    /// Smart Turn executor threads (analyses run at once); 0: one per core
    /// this process may use.
    pub smart_turn_threads: u32,
    /// ONNX Runtime intra-op threads of one Smart Turn analysis.
    pub smart_turn_intra_threads: u32,
    /// An analysis not started within this is skipped and the turn waits for
    /// its fallback, in ms.
    pub smart_turn_start_timeout_ms: u32,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        Self {
            vad_threads: 0,
            vad_linger_ms: brisvox_models::vad::linger::DEFAULT_MAX_LINGER.as_millis() as u32,
            smart_turn_threads: 0,
            smart_turn_intra_threads: brisvox_models::smart_turn::DEFAULT_INTRA_THREADS as u32,
            smart_turn_start_timeout_ms:
                brisvox_models::smart_turn::service::DEFAULT_START_TIMEOUT_MS as u32,
        }
    }
}

impl RuntimeSettings {
    /// Replaces each thread count whose variable is set in `env`.
    pub(super) fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), AgentError> {
        for (var, field) in [
            (ENV_VAD_THREADS, &mut self.vad_threads),
            (ENV_SMART_TURN_THREADS, &mut self.smart_turn_threads),
            (
                ENV_SMART_TURN_INTRA_THREADS,
                &mut self.smart_turn_intra_threads,
            ),
        ] {
            if let Some(value) = env(var) {
                *field = value
                    .trim()
                    .parse()
                    .map_err(|_| AgentError::invalid(var, &value, "a whole number of threads"))?;
            }
        }
        Ok(())
    }

    /// Checks every value.
    pub(super) fn check(&self) -> Result<(), AgentError> {
        range("runtime.vad_threads", self.vad_threads, 0, 256)?;
        range("runtime.vad_linger_ms", self.vad_linger_ms, 0, 32)?;
        range(
            "runtime.smart_turn_threads",
            self.smart_turn_threads,
            0,
            256,
        )?;
        range(
            "runtime.smart_turn_intra_threads",
            self.smart_turn_intra_threads,
            1,
            64,
        )?;
        range(
            "runtime.smart_turn_start_timeout_ms",
            self.smart_turn_start_timeout_ms,
            10,
            60_000,
        )
    }
}

/// The cores this process may use: its CPU affinity and cgroup quota, as
/// `std::thread::available_parallelism` reads them (1 when unknown).
pub fn usable_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl RuntimeSettings {
    /// Threads of the VAD pool: `vad_threads`, or for 0 half of `cores`, at least one.
    pub fn vad_threads_for(&self, cores: usize) -> usize {
        match self.vad_threads {
            0 => (cores / 2).max(1),
            n => n as usize,
        }
    }

    /// The VAD service's linger: adaptive up to `vad_linger_ms`, or off for 0.
    pub fn vad_linger(&self) -> brisvox_models::vad::linger::Linger {
        use brisvox_models::vad::linger::Linger;
        match self.vad_linger_ms {
            0 => Linger::Off,
            ms => Linger::Adaptive(std::time::Duration::from_millis(u64::from(ms))),
        }
    }

    /// Smart Turn executor threads: `smart_turn_threads`, or for 0 one per core.
    pub fn smart_turn_threads_for(&self, cores: usize) -> usize {
        match self.smart_turn_threads {
            0 => cores.max(1),
            n => n as usize,
        }
    }
}

/// The waiting-job bound of the model queues for `max_calls` calls: two jobs
/// per call, at least [`MIN_POOL_QUEUE`]. Every admitted call can have a VAD
/// batch and an analysis waiting without a refusal; the admission guard, not
/// the queue, refuses new calls under pressure.
pub fn pool_queue_capacity(max_calls: u32) -> usize {
    (2 * max_calls as usize).max(MIN_POOL_QUEUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_follows_max_calls_with_a_floor() {
        assert_eq!(pool_queue_capacity(1), 1024);
        assert_eq!(pool_queue_capacity(512), 1024);
        assert_eq!(pool_queue_capacity(4096), 8192);
    }

    #[test]
    fn the_environment_overrides_the_file_and_bad_values_are_named() {
        let mut r = RuntimeSettings::default();
        let env = |name: &str| (name == ENV_SMART_TURN_THREADS).then(|| "3".to_owned());
        r.apply_env(&env).unwrap();
        assert_eq!(r.smart_turn_threads, 3);
        let mut r = RuntimeSettings::default();
        let bad = |name: &str| (name == ENV_SMART_TURN_INTRA_THREADS).then(|| "two".to_owned());
        let e = r.apply_env(&bad).unwrap_err().to_string();
        assert!(e.contains(ENV_SMART_TURN_INTRA_THREADS), "{e}");
        let r = RuntimeSettings {
            smart_turn_threads: 257,
            ..RuntimeSettings::default()
        };
        assert!(r.check().is_err());
    }

    #[test]
    fn zero_threads_follow_the_cores_the_process_may_use() {
        let auto = RuntimeSettings::default();
        assert_eq!(auto.smart_turn_threads, 0);
        assert!(auto.check().is_ok());
        assert_eq!(auto.smart_turn_threads_for(1), 1);
        assert_eq!(auto.smart_turn_threads_for(4), 4);
        assert_eq!(auto.smart_turn_threads_for(0), 1);
        assert_eq!(auto.vad_threads_for(1), 1);
        assert_eq!(auto.vad_threads_for(2), 1);
        assert_eq!(auto.vad_threads_for(8), 4);
        let set = RuntimeSettings {
            vad_threads: 3,
            smart_turn_threads: 2,
            ..RuntimeSettings::default()
        };
        assert_eq!(set.smart_turn_threads_for(16), 2);
        assert_eq!(set.vad_threads_for(16), 3);
        assert!(usable_cores() >= 1);
    }
}
