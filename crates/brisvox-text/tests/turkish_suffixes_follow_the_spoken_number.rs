//! A suffix written after an apostrophe attaches to the spoken number with
//! its vowel harmony and consonant assimilation.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn case_endings_after_numbers() {
    for (written, spoken) in [
        ("3'te", "üçte"),
        ("3'de", "üçte"),
        ("5'i", "beşi"),
        ("5'te", "beşte"),
        ("2'de", "ikide"),
        ("2'yi", "ikiyi"),
        ("4'ü", "dördü"),
        ("4'te", "dörtte"),
        ("6'ya", "altıya"),
        ("10'da", "onda"),
        ("1990'da", "bin dokuz yüz doksanda"),
        ("1990'larda", "bin dokuz yüz doksanlarda"),
        ("100'den", "yüzden"),
        ("40'tan", "kırktan"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn ordinal_suffixes_after_numbers() {
    for (written, spoken) in [
        ("3'üncü", "üçüncü"),
        ("2'nci", "ikinci"),
        ("4'üncü", "dördüncü"),
        ("6'ncı", "altıncı"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn suffixes_after_times_percentages_and_currencies() {
    for (written, spoken) in [
        ("saat 14:30'da", "saat on dört otuzda"),
        ("%50'si", "yüzde ellisi"),
        ("150 TL'ye", "yüz elli liraya"),
        ("12.03.2026'da", "on iki Mart iki bin yirmi altıda"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}
