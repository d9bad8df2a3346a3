//! Periods and marks inside tokens are not boundaries.
mod common;
use common::*;

#[test]
fn decimals_and_thousands_in_both_conventions() {
    assert_eq!(
        chunks(en(), "Ok. Pi is 3.14 or 3,14 and 1,000 or 1.000 too. End"),
        ["Ok.", "Pi is 3.14 or 3,14 and 1,000 or 1.000 too.", "End"]
    );
}

#[test]
fn times_are_whole() {
    assert_eq!(
        chunks(en(), "Ok. Meet at 10:30 sharp. End"),
        ["Ok.", "Meet at 10:30 sharp.", "End"]
    );
}

#[test]
fn turkish_ordinals_and_list_markers() {
    assert_eq!(
        chunks(tr(), "Evet. Oğlum 3. sınıf öğrencisi. Son"),
        ["Evet.", "Oğlum 3. sınıf öğrencisi.", "Son"]
    );
    assert_eq!(
        chunks(en(), "1. Buy milk. Then go"),
        ["1. Buy milk.", "Then go"]
    );
}

#[test]
fn a_number_and_period_mid_line_before_a_capital_ends_a_sentence() {
    assert_eq!(
        chunks(en(), "Ok. It is done now. 2. We left."),
        ["Ok.", "It is done now.", "2.", "We left."]
    );
}

#[test]
fn abbreviations_per_language_case_insensitive() {
    assert_eq!(
        chunks(en(), "Ok. I met Dr. Smith and MR. Jones. End"),
        ["Ok.", "I met Dr. Smith and MR. Jones.", "End"]
    );
    assert_eq!(
        chunks(tr(), "Tamam. DOÇ. Ali ve Sn. Ayşe geldi. Son"),
        ["Tamam.", "DOÇ. Ali ve Sn. Ayşe geldi.", "Son"]
    );
    assert_eq!(
        chunks(tr(), "Tamam. İNG. Ali geldi. Son"),
        ["Tamam.", "İNG. Ali geldi.", "Son"]
    );
    assert_eq!(
        chunks(tr(), "Tamam. Elma, armut vb. aldık. Son"),
        ["Tamam.", "Elma, armut vb. aldık.", "Son"]
    );
    assert_eq!(
        chunks(tr(), "Tamam. Elma vb. Sonra"),
        ["Tamam.", "Elma vb.", "Sonra"]
    );
    // `vb.` is Turkish only: in English it is an ordinary word.
    assert_eq!(chunks(en(), "Ok. See vb. then"), ["Ok.", "See vb.", "then"]);
}

#[test]
fn urls_and_email_addresses() {
    assert_eq!(
        chunks(
            en(),
            "Ok. Visit www.example.com. for info or mail a@b.io. now. Go to example.org. Then"
        ),
        [
            "Ok.",
            "Visit www.example.com. for info or mail a@b.io. now.",
            "Go to example.org.",
            "Then"
        ]
    );
    assert_eq!(
        chunks(en(), "Ok. See https://x.io/a.b. 3 times"),
        ["Ok.", "See https://x.io/a.b.", "3 times"]
    );
}

#[test]
fn dotted_acronyms() {
    assert_eq!(
        chunks(en(), "Ok. The E.U. And N.Y.C. and B.C. Then. End"),
        ["Ok.", "The E.U. And N.Y.C. and B.C. Then.", "End"]
    );
}

#[test]
fn an_ellipsis_before_a_lowercase_word() {
    assert_eq!(
        chunks(en(), "Ok. Wait... what now? Fine"),
        ["Ok.", "Wait... what now?", "Fine"]
    );
    assert_eq!(
        chunks(en(), "Ok. Wait… what. Fine"),
        ["Ok.", "Wait… what.", "Fine"]
    );
}

#[test]
fn emoji_sequences_stay_whole() {
    let text = "Ok. Great 👨\u{200d}👩\u{200d}👧 and 🇹🇷! Next 👍🏽.";
    assert_eq!(
        chunks(en(), text),
        ["Ok.", "Great 👨\u{200d}👩\u{200d}👧 and 🇹🇷!", "Next 👍🏽."]
    );
}
