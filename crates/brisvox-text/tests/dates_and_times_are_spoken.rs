//! Dates (`12.03.2026`, `03/12/2026`) and times (`14:30`).
use brisvox_text::{Language, normalize::normalize};

#[test]
fn english_dates_and_times() {
    for (written, spoken) in [
        ("on 12.03.2026", "on March twelfth, twenty twenty-six"),
        ("on 03/12/2026", "on March twelfth, twenty twenty-six"),
        (
            "on 25/12/2026",
            "on December twenty-fifth, twenty twenty-six",
        ),
        ("at 14:30", "at fourteen thirty"),
        ("at 9:05", "at nine oh five"),
        ("at 10:00", "at ten o'clock"),
        ("at 18:00", "at eighteen hundred"),
    ] {
        assert_eq!(normalize(written, Language::En), spoken, "{written}");
    }
}

#[test]
fn turkish_dates_and_times() {
    for (written, spoken) in [
        (
            "12.03.2026 tarihinde",
            "on iki Mart iki bin yirmi altı tarihinde",
        ),
        ("03/12/2026", "üç Aralık iki bin yirmi altı"),
        ("2026-03-12", "on iki Mart iki bin yirmi altı"),
        ("saat 14:30", "saat on dört otuz"),
        ("saat 09:00", "saat dokuz"),
        ("saat 09:05", "saat dokuz sıfır beş"),
        ("saat 14.30", "saat on dört otuz"),
        ("14.30 oranı", "on dört virgül otuz oranı"),
    ] {
        assert_eq!(normalize(written, Language::Tr), spoken, "{written}");
    }
}

#[test]
fn impossible_dates_and_times_are_not_read_as_such() {
    assert_eq!(
        normalize("99:99", Language::En),
        "ninety-nine colon ninety-nine"
    );
    assert_eq!(
        normalize("32.13.2026", Language::Tr),
        "otuz iki nokta on üç nokta iki bin yirmi altı"
    );
}
