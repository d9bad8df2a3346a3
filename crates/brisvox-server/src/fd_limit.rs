//! Raises the soft RLIMIT_NOFILE to the hard limit at startup.
//!
//! Containers often start with a soft limit of 1024 open files; each call holds
//! at least one socket (two with a provider), so the server would stop
//! accepting at about a thousand calls with EMFILE (spec: "Three defects",
//! the file-descriptor limit). Raising the soft limit needs no privilege.

/// The soft limit before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileRaise {
    /// Soft limit at startup.
    pub before: u64,
    /// Soft limit now (the hard limit, or the platform's ceiling).
    pub after: u64,
}

/// Raises the soft limit of open files as far as allowed.
pub fn raise_nofile_limit() -> std::io::Result<NofileRaise> {
    let (before, _hard) = rlimit::Resource::NOFILE.get()?;
    let after = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok(NofileRaise { before, after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_reaches_the_hard_limit() {
        let raise = raise_nofile_limit().unwrap();
        let (soft, hard) = rlimit::Resource::NOFILE.get().unwrap();
        assert_eq!(soft, raise.after);
        assert!(raise.after >= raise.before);
        // Linux caps at the hard limit (or nr_open); never above it.
        assert!(soft <= hard);
    }
}
