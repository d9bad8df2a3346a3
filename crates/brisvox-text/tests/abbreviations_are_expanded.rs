//! Common abbreviations per language.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn english_abbreviations() {
    for (written, spoken) in [
        ("Dr. Smith", "Doctor Smith"),
        ("MR. Jones", "Mister Jones"),
        ("St. Louis", "Saint Louis"),
        ("Baker St. is near", "Baker Street is near"),
        (
            "apples, pears etc. and more",
            "apples, pears et cetera and more",
        ),
        ("apples etc.", "apples et cetera."),
        ("e.g. this", "for example this"),
        ("No. 5", "Number five"),
        ("say no. Then", "say no. Then"),
        ("vb. here", "vb. here"),
    ] {
        assert_eq!(normalize(written, Language::En), spoken, "{written}");
    }
}

#[test]
fn turkish_abbreviations() {
    for (written, spoken) in [
        ("Dr. Ayşe", "Doktor Ayşe"),
        ("DOÇ. Ali", "Doçent Ali"),
        ("Sn. Yılmaz", "Sayın Yılmaz"),
        ("elma, armut vb. aldık", "elma, armut ve benzeri aldık"),
        ("elma vb. Sonra", "elma ve benzeri. Sonra"),
        ("örn. bu", "örneğin bu"),
        ("Atatürk Cad. No. 5", "Atatürk Caddesi Numara beş"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}
