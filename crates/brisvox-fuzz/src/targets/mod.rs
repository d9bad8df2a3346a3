//! The harnesses, grouped by where their input comes from.

pub mod files;
pub mod link;
pub mod providers;
pub mod transport;
