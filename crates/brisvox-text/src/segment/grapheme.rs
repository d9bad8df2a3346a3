//! Grapheme-safe cut positions for the hard cut of an over-long token.
//!
//! This is not full Unicode segmentation (UAX #29): it knows the marks that
//! glue a visible character together in the text an LLM produces (emoji ZWJ
//! sequences, variation selectors, skin tones, keycaps, tag sequences,
//! regional-indicator flags and the combining marks of the common scripts).

const ZWJ: char = '\u{200D}';

/// Whether `c` attaches to the character before it, so a cut before `c`
/// would split a grapheme.
pub(crate) fn is_extender(c: char) -> bool {
    matches!(c as u32,
        0x200D | 0x20E3 | 0xFE00..=0xFE0F | 0xE0100..=0xE01EF | 0xE0020..=0xE007F
        | 0x1F3FB..=0x1F3FF
        // Latin, Greek and Cyrillic combining diacritics
        | 0x0300..=0x036F | 0x0483..=0x0489 | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF
        | 0x20D0..=0x20FF | 0xFE20..=0xFE2F
        // Hebrew points
        | 0x0591..=0x05BD | 0x05BF | 0x05C1..=0x05C2 | 0x05C4..=0x05C5 | 0x05C7
        // Arabic harakat
        | 0x0610..=0x061A | 0x064B..=0x065F | 0x0670 | 0x06D6..=0x06DC
        | 0x06DF..=0x06E4 | 0x06E7..=0x06E8 | 0x06EA..=0x06ED
        // Devanagari signs
        | 0x0900..=0x0903 | 0x093A..=0x094F | 0x0951..=0x0957 | 0x0962..=0x0963
        // Thai vowel and tone marks
        | 0x0E31 | 0x0E34..=0x0E3A | 0x0E47..=0x0E4E
        // kana voiced sound marks
        | 0x3099..=0x309A)
}

fn is_regional_indicator(c: char) -> bool {
    matches!(c as u32, 0x1F1E6..=0x1F1FF)
}

/// Whether a cut at byte `at` (a char boundary strictly inside `s`) keeps
/// every grapheme whole.
pub(crate) fn is_safe_cut(s: &str, at: usize) -> bool {
    let (Some(prev), Some(next)) = (s[..at].chars().next_back(), s[at..].chars().next()) else {
        return false;
    };
    if is_extender(next) || prev == ZWJ {
        return false;
    }
    if is_regional_indicator(prev) && is_regional_indicator(next) {
        // Flags are pairs: a cut is safe only after an even number of them.
        let run = s[..at]
            .chars()
            .rev()
            .take_while(|&c| is_regional_indicator(c))
            .count();
        return run % 2 == 0;
    }
    true
}

/// The nearest grapheme-safe cut at or before byte `at` (a char boundary),
/// or `at` itself when the whole prefix is one grapheme.
pub(crate) fn hard_cut(s: &str, at: usize) -> usize {
    let mut cut = at;
    while cut > 0 {
        if is_safe_cut(s, cut) {
            return cut;
        }
        cut = s[..cut].char_indices().next_back().map_or(0, |(i, _)| i);
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_between_letters_is_safe() {
        assert!(is_safe_cut("ab", 1));
    }

    #[test]
    fn zwj_sequences_flags_and_skin_tones_are_not_split() {
        let family = "a\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        let end = family.len();
        assert_eq!(hard_cut(family, end - 4), 1);
        let flags = "\u{1F1F9}\u{1F1F7}\u{1F1FA}\u{1F1F8}";
        assert_eq!(hard_cut(flags, 12), 8);
        let thumb = "x\u{1F44D}\u{1F3FD}";
        assert_eq!(hard_cut(thumb, 5), 1);
        let heart = "a\u{2764}\u{FE0F}";
        assert_eq!(
            hard_cut(heart, heart.len() - 3),
            1,
            "variation selector stays"
        );
        let keycap = "a1\u{FE0F}\u{20E3}";
        assert_eq!(hard_cut(keycap, keycap.len() - 3), 1, "keycap stays whole");
        let e_acute = "e\u{301}";
        assert_eq!(hard_cut(e_acute, 1), 1, "no safe cut: the cap itself");
    }
}
