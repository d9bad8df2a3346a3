//! brisvox-audio.
