//! On realistic token streams (one token every 30 ms) the first chunk is
//! released by the token right after the one that completes its boundary.
use brisvox_text::Language;
use brisvox_text::segment::{SegmenterConfig, timed_chunks};

const TOKEN_GAP_MS: u64 = 30;

/// Splits an answer into LLM-like tokens: a word with its leading space,
/// punctuation as its own token.
fn tokenize(answer: &str) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for (i, word) in answer.split(' ').enumerate() {
        let lead = if i == 0 { "" } else { " " };
        let body = word.trim_end_matches([',', '.', '!', '?', ':']);
        tokens.push(format!("{lead}{body}"));
        if body.len() < word.len() {
            tokens.push(word[body.len()..].to_owned());
        }
    }
    tokens
}

/// Index of the token that completes the first clause boundary or sentence end.
fn boundary_token(tokens: &[String]) -> usize {
    tokens
        .iter()
        .position(|t| t.ends_with([',', '.', '!', '?', ':']))
        .expect("answer has a boundary")
}

fn check(language: Language, answer: &str) {
    let tokens = tokenize(answer);
    let timed: Vec<(u64, &str)> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u64 * TOKEN_GAP_MS, t.as_str()))
        .collect();
    let chunks = timed_chunks(SegmenterConfig::new(language), &timed);
    let boundary = boundary_token(&tokens);
    let first = &chunks[0];
    assert_eq!(
        first.token,
        Some(boundary + 1),
        "{answer:?}: first chunk {first:?}"
    );
    assert_eq!(first.at_ms - timed[boundary].0, TOKEN_GAP_MS);
    let joined: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(joined, answer, "every word spoken once, in order");
}

#[test]
fn english_answers() {
    check(
        Language::En,
        "Sure, here is a fairly long answer to your question.",
    );
    check(
        Language::En,
        "Okay, I booked the table for two at 7:30 tonight. Anything else?",
    );
    check(
        Language::En,
        "Yes. Dr. Smith can see you on Monday at 10:15, or on Tuesday.",
    );
    check(
        Language::En,
        "Good question: the E.U. rules changed in 2024, so the fee is 3.5% now.",
    );
}

#[test]
fn turkish_answers() {
    check(
        Language::Tr,
        "Peki, randevunuzu yarın saat 14:30 için ayarladım.",
    );
    check(
        Language::Tr,
        "Tamam, oğlunuz 3. sınıf öğrencisi olarak kayıtlı. Başka bir şey var mı?",
    );
    check(
        Language::Tr,
        "Elbette. Toplam tutar 1.250,50 TL, ödeme vb. işlemler yarın yapılacak.",
    );
    check(
        Language::Tr,
        "Merhaba, Dr. Ayşe Hanım bugün izinli, yarın 09:00'da burada olacak.",
    );
}

#[test]
fn later_chunks_are_released_by_the_token_after_the_sentence_end() {
    let tokens = tokenize("Sure, one two. Three four. Five");
    let timed: Vec<(u64, &str)> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u64, t.as_str()))
        .collect();
    let chunks = timed_chunks(SegmenterConfig::new(Language::En), &timed);
    let released: Vec<Option<usize>> = chunks.iter().map(|c| c.token).collect();
    // tokens: Sure , _one _two . _Three _four . _Five
    assert_eq!(released, [Some(2), Some(5), Some(8), None]);
}
