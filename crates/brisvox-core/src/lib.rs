//! brisvox-core.
