//! `%15` and `15%` in both languages.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn english_percentages() {
    for (written, spoken) in [
        ("15% off", "fifteen percent off"),
        ("%15 off", "fifteen percent off"),
        ("3.5% rate", "three point five percent rate"),
    ] {
        assert_eq!(normalize(written, Language::En), spoken);
    }
}

#[test]
fn turkish_percentages() {
    for (written, spoken) in [
        ("%15 indirim", "yüzde on beş indirim"),
        ("15% indirim", "yüzde on beş indirim"),
        ("%3,5 faiz", "yüzde üç virgül beş faiz"),
        ("%50'si", "yüzde ellisi"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken);
    }
}
