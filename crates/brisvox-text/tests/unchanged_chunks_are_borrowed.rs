//! A chunk with nothing to rewrite comes back borrowed; the inline limit.
use std::borrow::Cow;

use brisvox_text::Language;
use brisvox_text::normalize::{INLINE_CHUNK_CHARS, needs_offload, normalize};

#[test]
fn text_without_digits_symbols_or_periods_is_borrowed() {
    for language in [Language::En, Language::Tr] {
        assert!(matches!(
            normalize("Merhaba, nasılsın", language),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            normalize("Hello. This is fine.", language),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            normalize("mp3 and B12", language),
            Cow::Borrowed(_)
        ));
    }
}

#[test]
fn rewritten_text_is_owned() {
    assert!(matches!(normalize("3 cats", Language::En), Cow::Owned(_)));
}

#[test]
fn chunks_over_the_inline_limit_need_offload() {
    assert_eq!(INLINE_CHUNK_CHARS, 256);
    assert!(!needs_offload(&"a".repeat(256)));
    assert!(needs_offload(&"a".repeat(257)));
    assert!(!needs_offload(&"ş".repeat(256)), "chars, not bytes");
    assert!(needs_offload(&"ş".repeat(257)));
}
