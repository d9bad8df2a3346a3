//! Our phoneme ids for each golden sentence's phonemes are exactly the ids
//! piper-phonemize's `phoneme_ids_espeak` gives with the voice's map (the
//! phonemes themselves are compared in brisvox-providers, where espeak-ng runs).

mod piper_common;

#[test]
fn ids_match_piper_phonemize_for_every_golden_sentence() {
    let Some(voice) = piper_common::voice_or_skip("ids_match_piper_phonemize") else {
        return;
    };
    let mut sentences = 0;
    for case in piper_common::goldens() {
        for s in &case.sentences {
            let ours = voice.config().phoneme_ids(&s.phonemes);
            assert_eq!(ours.ids, s.ids, "{:?} / {:?}", case.text, s.phonemes);
            assert!(ours.missing.is_empty(), "{:?}", ours.missing);
            sentences += 1;
        }
    }
    assert!(sentences >= 8, "only {sentences} golden sentences");
}
