//! Fake vendor servers for the adapter tests: each binds 127.0.0.1:0, speaks the
//! vendor's documented protocol, follows a per-test script and records what it
//! received. Plus a `tracing` capture to check that keys never reach a log.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod logs;
pub mod openai;
