//! Currency symbols and codes before or after an amount.
use brisvox_text::{Language, normalize::normalize};

#[test]
fn english_currencies() {
    for (written, spoken) in [
        ("$20", "twenty dollars"),
        ("$1", "one dollar"),
        ("$20.50", "twenty dollars and fifty cents"),
        ("$0.01", "zero dollars and one cent"),
        ("€5", "five euros"),
        ("£3", "three pounds"),
        ("150 TL", "one hundred fifty lira"),
        ("₺150", "one hundred fifty lira"),
        ("20 USD", "twenty dollars"),
        ("5€", "five euros"),
        ("$ 20", "twenty dollars"),
        ("$1,250", "one thousand two hundred fifty dollars"),
    ] {
        assert_eq!(normalize(written, Language::En), spoken, "{written}");
    }
}

#[test]
fn turkish_currencies() {
    for (written, spoken) in [
        ("150 TL", "yüz elli lira"),
        ("150,50 TL", "yüz elli lira elli kuruş"),
        ("1.250 ₺", "bin iki yüz elli lira"),
        ("₺150", "yüz elli lira"),
        ("$20", "yirmi dolar"),
        ("€5", "beş avro"),
        ("150 TL'ye", "yüz elli liraya"),
        ("20 EUR", "yirmi avro"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn a_code_glued_to_a_word_is_not_a_currency() {
    assert_eq!(normalize("150 TLX", Language::Tr), "yüz elli TLX");
}
