//! The normaliser never panics, keeps text without triggers borrowed and is
//! idempotent on its own output for plain numbers.
use std::borrow::Cow;

use brisvox_text::{Language, normalize::normalize};
use proptest::prelude::*;

proptest! {
    #[test]
    fn arbitrary_text_does_not_panic(text in "[0-9a-zçğıöşüA-Z .,:/%$€£₺+()'’\\-]{0,200}", tr in any::<bool>()) {
        let language = if tr { Language::Tr } else { Language::En };
        let out = normalize(&text, language);
        prop_assert!(out.len() <= text.len() * 40 + 16);
    }

    #[test]
    fn output_has_no_digits_left_for_number_lists(numbers in prop::collection::vec(0u64..10_000_000, 1..20), tr in any::<bool>()) {
        let language = if tr { Language::Tr } else { Language::En };
        let text = numbers.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
        let out = normalize(&text, language);
        prop_assert!(!out.chars().any(|c| c.is_ascii_digit()), "{}", out);
    }

    #[test]
    fn letters_only_text_is_borrowed(text in "[a-zA-Zçğıöşü ,;!?]{0,200}") {
        prop_assert!(matches!(normalize(&text, Language::Tr), Cow::Borrowed(_)));
    }
}
