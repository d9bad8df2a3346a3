//! `brisvox drain`: start the drain of a running server from outside it, and
//! wait until the process has exited.
//!
//! It sends SIGTERM, which `brisvox serve` takes as the start of its drain
//! (readiness false at once, new calls admitted for `[server] drain_admit_s`,
//! running calls kept up to `drain_grace_s`), then polls until the process is
//! gone. In a Kubernetes pod this is the `preStop` hook: the pod stops taking
//! calls as soon as it is told to stop, and the kubelet's own SIGTERM, sent
//! when the hook returns, finds a process that has already drained.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, test_kill_process};

/// How often the process is looked for while it drains.
const POLL: Duration = Duration::from_millis(200);

/// Why `brisvox drain` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DrainError {
    /// Not a process id (0, or too large).
    #[error("{pid} is not a process id")]
    BadPid {
        /// What was given.
        pid: u32,
    },
    /// The signal could not be sent (no such process, not allowed).
    #[error("cannot signal process {pid}: {source}")]
    Signal {
        /// The process.
        pid: u32,
        /// The system's error.
        source: std::io::Error,
    },
    /// The process was still running when the wait ended.
    #[error("process {pid} was still draining after {waited_s} s")]
    StillRunning {
        /// The process.
        pid: u32,
        /// How long we waited, in seconds.
        waited_s: u64,
    },
}

/// Sends SIGTERM to `pid` and waits up to `timeout` until it has exited.
pub fn drain_process(pid: u32, timeout: Duration) -> Result<(), DrainError> {
    let target = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or(DrainError::BadPid { pid })?;
    kill_process(target, Signal::TERM).map_err(|e| DrainError::Signal {
        pid,
        source: e.into(),
    })?;
    eprintln!("brisvox drain: SIGTERM sent to process {pid}; waiting for it to exit");
    let start = Instant::now();
    while is_running(pid, target) {
        if start.elapsed() >= timeout {
            return Err(DrainError::StillRunning {
                pid,
                waited_s: timeout.as_secs(),
            });
        }
        std::thread::sleep(POLL);
    }
    eprintln!("brisvox drain: process {pid} has exited");
    Ok(())
}

/// True while the process exists and has not exited. An exited process that
/// its parent has not reaped yet (a zombie, state `Z` in `/proc/PID/stat`) has
/// exited: its drain is over.
fn is_running(pid: u32, target: Pid) -> bool {
    if test_kill_process(target).is_err() {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // "PID (comm) STATE ...": comm may hold spaces and parentheses.
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    !matches!(state, Some('Z' | 'X'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_running() {
        let me = std::process::id();
        let pid = Pid::from_raw(i32::try_from(me).unwrap()).unwrap();
        assert!(is_running(me, pid));
    }

    #[test]
    fn a_bad_pid_is_an_error_not_a_signal_to_everyone() {
        // kill(0, ...) would signal our own process group: refused up front.
        assert!(matches!(
            drain_process(0, Duration::ZERO),
            Err(DrainError::BadPid { pid: 0 })
        ));
        assert!(matches!(
            drain_process(u32::MAX, Duration::ZERO),
            Err(DrainError::BadPid { .. })
        ));
    }
}
