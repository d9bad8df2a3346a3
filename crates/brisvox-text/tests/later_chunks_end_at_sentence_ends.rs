//! After the first chunk, chunks end only at sentence ends (and newlines).
mod common;
use common::*;

#[test]
fn period_question_exclamation_and_ellipsis_end_sentences() {
    assert_eq!(
        chunks(en(), "Ok. One here. Two there? Three! Four… Five"),
        ["Ok.", "One here.", "Two there?", "Three!", "Four…", "Five"]
    );
}

#[test]
fn runs_of_terminators_stay_together() {
    assert_eq!(
        chunks(en(), "Ok. Really?! Yes!!! Hmm... Fine"),
        ["Ok.", "Really?!", "Yes!!!", "Hmm...", "Fine"]
    );
}

#[test]
fn closing_quotes_brackets_and_emphasis_stay_with_the_sentence() {
    assert_eq!(
        chunks(en(), "Ok. **Done.** She said \"yes.\" (See above.) Next"),
        [
            "Ok.",
            "**Done.**",
            "She said \"yes.\"",
            "(See above.)",
            "Next"
        ]
    );
    assert_eq!(
        chunks(tr(), "Tamam. «Geldim.» Sonra"),
        ["Tamam.", "«Geldim.»", "Sonra"]
    );
}

#[test]
fn a_terminator_glued_to_the_next_word_is_not_an_end() {
    assert_eq!(
        chunks(en(), "Ok. Hello.World is here. Done"),
        ["Ok.", "Hello.World is here.", "Done"]
    );
}
