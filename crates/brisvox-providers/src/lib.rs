//! brisvox-providers.
