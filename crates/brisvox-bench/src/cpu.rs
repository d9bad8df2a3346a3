//! CPU clocks of this process and thread (Linux `clock_gettime`).

/// Reads a POSIX CPU-time clock in nanoseconds (0 if the clock is unavailable).
#[allow(unsafe_code)]
fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, exclusively borrowed `timespec` for the duration of
    // the call; `clock_gettime` only writes into it and has no other preconditions.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// CPU time of the whole process (every thread), nanoseconds.
pub(crate) fn process_ns() -> u64 {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the calling thread, nanoseconds.
pub(crate) fn thread_ns() -> u64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}
