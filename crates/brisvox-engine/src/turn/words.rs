//! What the caller's words say about turn-taking, per language: backchannels
//! ("mm-hmm", "yeah", "tamam") that never interrupt the bot on their own, and
//! the text evidence that lets a turn scored "incomplete" by the end-of-turn
//! model end sooner (a complete short answer, terminal punctuation) or never
//! sooner (a trailing "and", "the", "um").
//!
//! Pure functions over transcript text; no state, no clock. Words are compared
//! after [`normalize_word`]: lower case, without surrounding punctuation, and
//! hyphenated forms split (`mm-hmm` is `mm` + `hmm`).

use brisvox_text::Language;

/// English backchannels: acknowledgements that do not take the floor.
pub const BACKCHANNELS_EN: &[&str] = &[
    "mm-hmm", "mhm", "mm", "hmm", "uh-huh", "yeah", "yes", "yep", "yup", "okay", "ok", "right",
    "sure", "alright", "oh", "ah", "aha", "i see", "got it", "cool", "nice", "great",
];

/// Turkish backchannels.
pub const BACKCHANNELS_TR: &[&str] = &[
    "hı hı", "hıhı", "ıhı", "hm", "hmm", "evet", "tamam", "peki", "he", "hee", "aynen", "doğru",
    "tabii", "tabi", "anladım", "olur", "aha", "haa", "ha",
];

/// English short answers that are a whole turn on their own.
const SHORT_ANSWERS_EN: &[&str] = &[
    "yes",
    "no",
    "yeah",
    "yep",
    "nope",
    "okay",
    "ok",
    "sure",
    "right",
    "correct",
    "exactly",
    "thanks",
    "thank",
    "you",
    "please",
    "hello",
    "hi",
    "bye",
    "goodbye",
    "fine",
    "great",
    "done",
    "zero",
    "oh",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
];

/// Turkish short answers.
const SHORT_ANSWERS_TR: &[&str] = &[
    "evet",
    "hayır",
    "tamam",
    "olur",
    "peki",
    "doğru",
    "aynen",
    "teşekkürler",
    "teşekkür",
    "ederim",
    "sağol",
    "sağolun",
    "merhaba",
    "görüşürüz",
    "sıfır",
    "bir",
    "iki",
    "üç",
    "dört",
    "beş",
    "altı",
    "yedi",
    "sekiz",
    "dokuz",
    "on",
    "yirmi",
    "otuz",
    "kırk",
    "elli",
    "altmış",
    "yetmiş",
    "seksen",
    "doksan",
    "yüz",
    "bin",
    "bugün",
    "yarın",
];

/// English words after which a sentence goes on.
const CONTINUATIONS_EN: &[&str] = &[
    "and", "but", "or", "so", "because", "if", "that", "which", "who", "the", "a", "an", "to",
    "of", "for", "with", "in", "on", "at", "from", "by", "my", "your", "our", "their", "his",
    "her", "is", "are", "was", "were", "um", "uh", "er", "erm", "like", "then", "than", "about",
    "into", "i", "we", "it's", "i'm", "i'd", "would", "could", "should", "will", "can",
];

/// Turkish words after which a sentence goes on.
const CONTINUATIONS_TR: &[&str] = &[
    "ve", "ama", "fakat", "veya", "ya", "yani", "çünkü", "ki", "eğer", "ile", "için", "gibi",
    "şey", "ee", "eee", "ım", "bu", "şu", "o", "bir", "daha", "sonra", "ben", "biz", "sen",
];

/// The backchannel list of a language (what `interruption.backchannels`
/// defaults to in the agent file).
pub fn default_backchannels(language: Language) -> Vec<String> {
    let list = match language {
        Language::Tr => BACKCHANNELS_TR,
        _ => BACKCHANNELS_EN,
    };
    list.iter().map(|w| (*w).to_owned()).collect()
}

/// `word` lower-cased without the punctuation around it (`"Yeah,"` -> `yeah`).
pub fn normalize_word(word: &str) -> String {
    word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '\''))
        .to_lowercase()
}

/// The words of `text`, normalised, hyphenated forms split, empty ones dropped.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .map(normalize_word)
        .filter(|w| !w.is_empty())
}

/// A set of words built from phrases (`"i see"` adds `i` and `see`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WordSet {
    words: Vec<String>,
}

impl WordSet {
    /// The words of `phrases`.
    pub fn new<S: AsRef<str>>(phrases: &[S]) -> Self {
        let mut words: Vec<String> = phrases.iter().flat_map(|p| words(p.as_ref())).collect();
        words.sort();
        words.dedup();
        WordSet { words }
    }

    /// Whether the set has no word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether `word` (normalised) is in the set.
    pub fn contains(&self, word: &str) -> bool {
        self.words
            .binary_search_by(|w| w.as_str().cmp(word))
            .is_ok()
    }

    /// Words of `text` that are not in the set.
    pub fn count_others(&self, text: &str) -> usize {
        words(text).filter(|w| !self.contains(w)).count()
    }
}

/// What the final transcript of a paused turn says about its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEvidence {
    /// Nothing either way (no text, no punctuation).
    None,
    /// The sentence goes on: a trailing conjunction, article, preposition or
    /// filler, or a trailing comma, dash or ellipsis.
    GoesOn,
    /// Ends with `.`, `!` or `?`.
    Terminal,
    /// A complete short answer ("yes", "no thanks", "four two seven").
    ShortAnswer,
}

/// Text evidence rules of one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRules {
    short_answers: WordSet,
    continuations: WordSet,
    /// Most words of a short answer.
    pub short_answer_max_words: usize,
}

impl TextRules {
    /// The rules of `language`; short answers of up to `max_words` words.
    pub fn new(language: Language, max_words: usize) -> Self {
        let (short, cont) = match language {
            Language::Tr => (SHORT_ANSWERS_TR, CONTINUATIONS_TR),
            _ => (SHORT_ANSWERS_EN, CONTINUATIONS_EN),
        };
        TextRules {
            short_answers: WordSet::new(short),
            continuations: WordSet::new(cont),
            short_answer_max_words: max_words,
        }
    }

    /// What `text` (the turn's final transcript) says.
    pub fn evidence(&self, text: &str) -> TextEvidence {
        let text = text.trim();
        let Some(last_raw) = text.split_whitespace().last() else {
            return TextEvidence::None;
        };
        if text.ends_with([',', '-', ';', ':', '…']) || text.ends_with("..") {
            return TextEvidence::GoesOn;
        }
        let last = normalize_word(last_raw);
        if self.continuations.contains(&last) {
            return TextEvidence::GoesOn;
        }
        let all: Vec<String> = words(text).collect();
        let numeric = |w: &str| w.chars().all(|c| c.is_ascii_digit());
        if !all.is_empty()
            && all.len() <= self.short_answer_max_words
            && all
                .iter()
                .all(|w| self.short_answers.contains(w) || numeric(w))
        {
            return TextEvidence::ShortAnswer;
        }
        if text.ends_with(['.', '!', '?', '。']) {
            return TextEvidence::Terminal;
        }
        TextEvidence::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_compared_lower_case_without_punctuation_and_hyphens_split() {
        let set = WordSet::new(&["mm-hmm", "i see", "Yeah"]);
        assert!(set.contains("mm") && set.contains("hmm") && set.contains("see"));
        assert_eq!(set.count_others("Mm-hmm, yeah."), 0);
        assert_eq!(set.count_others("yeah, wait a second"), 3);
        assert_eq!(normalize_word("«Okay!»"), "okay");
    }

    #[test]
    fn both_languages_have_backchannels_that_are_only_backchannels() {
        for (lang, text) in [
            (Language::En, "Uh-huh, okay."),
            (Language::Tr, "Hı hı, tamam."),
        ] {
            let set = WordSet::new(&default_backchannels(lang));
            assert_eq!(set.count_others(text), 0, "{lang:?}");
            assert_eq!(set.count_others("stop please"), 2);
        }
    }

    #[test]
    fn text_evidence_reads_short_answers_punctuation_and_trailing_words() {
        let en = TextRules::new(Language::En, 3);
        assert_eq!(en.evidence("Yes."), TextEvidence::ShortAnswer);
        assert_eq!(en.evidence("no thanks"), TextEvidence::ShortAnswer);
        assert_eq!(en.evidence("four two seven"), TextEvidence::ShortAnswer);
        assert_eq!(en.evidence("4 2 7"), TextEvidence::ShortAnswer);
        assert_eq!(
            en.evidence("I want to book a table."),
            TextEvidence::Terminal
        );
        assert_eq!(en.evidence("Can you help me?"), TextEvidence::Terminal);
        assert_eq!(
            en.evidence("I want to book a table and"),
            TextEvidence::GoesOn
        );
        assert_eq!(en.evidence("I'd like the."), TextEvidence::GoesOn);
        assert_eq!(en.evidence("so I was thinking,"), TextEvidence::GoesOn);
        assert_eq!(
            en.evidence("he was not an ill disposed young man"),
            TextEvidence::None
        );
        assert_eq!(en.evidence("  "), TextEvidence::None);
        let tr = TextRules::new(Language::Tr, 3);
        assert_eq!(tr.evidence("Evet."), TextEvidence::ShortAnswer);
        assert_eq!(
            tr.evidence("Yarın için bir masa ayırtmak istiyorum."),
            TextEvidence::Terminal
        );
        assert_eq!(
            tr.evidence("masa ayırtmak istiyorum ama"),
            TextEvidence::GoesOn
        );
    }
}
