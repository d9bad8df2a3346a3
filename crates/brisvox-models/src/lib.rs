//! brisvox-models.
