//! Turkish `3.` before a lowercase word, English `3rd`.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn turkish_ordinals() {
    for (written, spoken) in [
        ("3. sınıf", "üçüncü sınıf"),
        ("1. kat", "birinci kat"),
        ("2. kez", "ikinci kez"),
        ("4. gün", "dördüncü gün"),
        ("6. ay", "altıncı ay"),
        ("10. yıl", "onuncu yıl"),
        ("40. yıl", "kırkıncı yıl"),
        ("Bitti 2. Sonra", "Bitti iki. Sonra"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn english_ordinals() {
    for (written, spoken) in [
        ("the 3rd time", "the third time"),
        ("the 1st", "the first"),
        ("21st century", "twenty-first century"),
        ("12th", "twelfth"),
        ("the 20th", "the twentieth"),
    ] {
        assert_eq!(normalize(written, Language::En), spoken, "{written}");
    }
}
