//! Phone numbers are read digit by digit, with a pause between groups.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn turkish_phone_numbers() {
    for (written, spoken) in [
        (
            "+90 532 123 45 67",
            "artı dokuz sıfır, beş üç iki, bir iki üç, dört beş, altı yedi",
        ),
        (
            "0532 123 45 67",
            "sıfır beş üç iki, bir iki üç, dört beş, altı yedi",
        ),
        (
            "05321234567",
            "sıfır beş üç iki bir iki üç dört beş altı yedi",
        ),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn english_phone_numbers() {
    for (written, spoken) in [
        (
            "(555) 123-4567",
            "five five five, one two three, four five six seven",
        ),
        (
            "555-123-4567",
            "five five five, one two three, four five six seven",
        ),
        (
            "+14155552671",
            "plus one four one five five five five two six seven one",
        ),
    ] {
        assert_eq!(normalize(written, Language::En), spoken, "{written}");
    }
}

#[test]
fn counted_numbers_are_not_phone_numbers() {
    assert_eq!(normalize("1 2 3", Language::En), "one two three");
    assert_eq!(normalize("10-20", Language::En), "ten to twenty");
}
