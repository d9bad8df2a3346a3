//! brisvox-text.
