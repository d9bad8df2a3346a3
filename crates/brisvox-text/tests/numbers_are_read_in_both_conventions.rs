//! Cardinals and decimals in both conventions, per language.
use brisvox_text::{Language, normalize::normalize};

fn check(language: Language, table: &[(&str, &str)]) {
    for (written, spoken) in table {
        assert_eq!(
            normalize(written, language),
            *spoken,
            "{language:?}: {written}"
        );
    }
}

#[test]
fn english_numbers() {
    check(
        Language::En,
        &[
            ("7 days", "seven days"),
            ("21 people", "twenty-one people"),
            (
                "1,250,000 users",
                "one million two hundred fifty thousand users",
            ),
            (
                "1.250.000 users",
                "one million two hundred fifty thousand users",
            ),
            ("pi is 3.14", "pi is three point one four"),
            ("pi is 3,14", "pi is three point one four"),
            ("1,000 or 1.000", "one thousand or one point zero zero zero"),
            (
                "1,250.50 and 1.250,50",
                "one thousand two hundred fifty point five zero and one thousand two hundred fifty point five zero",
            ),
            ("it is -5 today", "it is minus five today"),
            ("(3 items)", "(three items)"),
            ("room 4B", "room four B"),
        ],
    );
}

#[test]
fn turkish_numbers() {
    check(
        Language::Tr,
        &[
            ("7 gün", "yedi gün"),
            ("1.250.000 kişi", "bir milyon iki yüz elli bin kişi"),
            ("1,250,000 kişi", "bir milyon iki yüz elli bin kişi"),
            ("3,14 ve 3.14", "üç virgül on dört ve üç virgül on dört"),
            ("1.000 ve 1,000", "bin ve bir virgül sıfır sıfır sıfır"),
            ("0,05 oranı", "sıfır virgül sıfır beş oranı"),
            ("1.250,50", "bin iki yüz elli virgül elli"),
            ("-5 derece", "eksi beş derece"),
            ("100 ve 1000", "yüz ve bin"),
        ],
    );
}

#[test]
fn english_years_after_a_year_word() {
    check(
        Language::En,
        &[
            ("in 1990", "in nineteen ninety"),
            ("since 2005", "since two thousand five"),
            ("the 1990s", "the nineteen nineties"),
            ("the 80's", "the eighties"),
            ("1990 people", "one thousand nine hundred ninety people"),
        ],
    );
}

#[test]
fn digits_inside_words_are_left_alone() {
    check(
        Language::En,
        &[("mp3 and B12", "mp3 and B12"), ("COVID19", "COVID19")],
    );
}

#[test]
fn numbers_too_long_for_a_value_are_read_digit_by_digit() {
    check(
        Language::En,
        &[(
            "1234567890123456789012",
            "one two three four five six seven eight nine zero one two three four five six seven eight nine zero one two",
        )],
    );
    check(Language::Tr, &[("1.2.3", "bir nokta iki nokta üç")]);
}
