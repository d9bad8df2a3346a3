//! A Piper voice's `.onnx.json`: sample rate, inference scales and the map
//! from phonemes (Unicode codepoints) to model ids; and Piper's id scheme.
//!
//! The scheme (Piper's `phoneme_ids_espeak`, checked against piper-phonemize
//! goldens in `tests/piper_ids_match_piper_phonemize.rs`): the BOS id (`^`),
//! then every phoneme's ids each followed by the pad id (`_`), then the EOS
//! id (`$`) — `^ _ p1 _ p2 _ ... pn _ $`. A phoneme missing from the map is
//! skipped, as Piper does, and reported in [`PhonemeIds::missing`].

use std::collections::HashMap;

use serde_json::Value;

/// Beginning of an utterance.
pub const BOS: char = '^';
/// End of an utterance.
pub const EOS: char = '$';
/// Put after every phoneme.
pub const PAD: char = '_';

/// Why a voice configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad Piper voice configuration: {reason}")]
pub struct VoiceConfigError {
    /// What was wrong.
    pub reason: String,
}

fn bad(reason: impl Into<String>) -> VoiceConfigError {
    VoiceConfigError {
        reason: reason.into(),
    }
}

/// What the synthesis needs from a voice's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceConfig {
    /// Rate of the model's audio, in Hz (`audio.sample_rate`).
    pub sample_rate_hz: u32,
    /// `inference.noise_scale`.
    pub noise_scale: f32,
    /// `inference.length_scale` (above 1 speaks slower).
    pub length_scale: f32,
    /// `inference.noise_w`.
    pub noise_w: f32,
    /// `num_speakers`; above 1 the model takes a speaker id (`sid`).
    pub num_speakers: u32,
    /// The espeak-ng voice the phonemes must come from (`espeak.voice`).
    pub espeak_voice: String,
    /// `phoneme_id_map`: each phoneme codepoint to its ids.
    pub phoneme_id_map: HashMap<char, Vec<i64>>,
}

/// A phoneme string mapped to ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PhonemeIds {
    /// The model's `input`.
    pub ids: Vec<i64>,
    /// Phonemes that were not in the map (skipped), in order.
    pub missing: Vec<char>,
}

impl VoiceConfig {
    /// Parses a voice's `.onnx.json` text.
    pub fn from_json(text: &str) -> Result<Self, VoiceConfigError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if let Some(kind) = doc.get("phoneme_type").and_then(Value::as_str)
            && kind != "espeak"
        {
            return Err(bad(format!(
                "phoneme_type is {kind:?}; only \"espeak\" voices are supported"
            )));
        }
        let rate = number(&doc, &["audio", "sample_rate"])?;
        if !(1_000.0..=192_000.0).contains(&rate) || rate.fract() != 0.0 {
            return Err(bad(format!("audio.sample_rate {rate} is not a rate in Hz")));
        }
        let scale = |key: &str| number(&doc, &["inference", key]).map(|v| v as f32);
        let config = VoiceConfig {
            sample_rate_hz: rate as u32,
            noise_scale: scale("noise_scale")?,
            length_scale: scale("length_scale")?,
            noise_w: scale("noise_w")?,
            num_speakers: doc
                .get("num_speakers")
                .and_then(Value::as_u64)
                .map_or(1, |n| n.clamp(1, u64::from(u32::MAX)) as u32),
            espeak_voice: doc
                .pointer("/espeak/voice")
                .and_then(Value::as_str)
                .unwrap_or("en-us")
                .to_owned(),
            phoneme_id_map: id_map(&doc)?,
        };
        for c in [BOS, EOS, PAD] {
            if !config.phoneme_id_map.contains_key(&c) {
                return Err(bad(format!("phoneme_id_map has no {c:?}")));
            }
        }
        Ok(config)
    }

    /// Piper's ids for `phonemes` (one sentence, as espeak-ng's IPA with
    /// Piper's punctuation): `^ _ p1 _ ... pn _ $`.
    pub fn phoneme_ids(&self, phonemes: &str) -> PhonemeIds {
        let mut out = PhonemeIds::default();
        let map = &self.phoneme_id_map;
        // The three are checked in `from_json`.
        let (bos, eos, pad) = (&map[&BOS], &map[&EOS], &map[&PAD]);
        out.ids.extend_from_slice(bos);
        out.ids.extend_from_slice(pad);
        for c in phonemes.chars() {
            match map.get(&c) {
                Some(ids) => {
                    out.ids.extend_from_slice(ids);
                    out.ids.extend_from_slice(pad);
                }
                None => out.missing.push(c),
            }
        }
        out.ids.extend_from_slice(eos);
        out
    }
}

fn number(doc: &Value, path: &[&str]) -> Result<f64, VoiceConfigError> {
    let mut v = doc;
    for key in path {
        v = v
            .get(key)
            .ok_or_else(|| bad(format!("{} is missing", path.join("."))))?;
    }
    v.as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| bad(format!("{} is not a number", path.join("."))))
}

fn id_map(doc: &Value) -> Result<HashMap<char, Vec<i64>>, VoiceConfigError> {
    let map = doc
        .get("phoneme_id_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("phoneme_id_map is missing"))?;
    let mut out = HashMap::with_capacity(map.len());
    for (key, ids) in map {
        let mut chars = key.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return Err(bad(format!(
                "phoneme_id_map key {key:?} is not one codepoint"
            )));
        };
        let ids = ids
            .as_array()
            .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
            .filter(|ids| !ids.is_empty())
            .ok_or_else(|| bad(format!("phoneme_id_map[{key:?}] is not a list of integers")))?;
        out.insert(c, ids);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
        "audio": {"sample_rate": 22050},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "num_speakers": 1,
        "phoneme_id_map": {"_": [0], "^": [1], "$": [2], " ": [3], "a": [14], "ˈ": [120]}
    }"#;

    #[test]
    fn parses_rate_scales_and_map() {
        let c = VoiceConfig::from_json(SMALL).unwrap();
        assert_eq!(c.sample_rate_hz, 22_050);
        assert_eq!(
            (c.noise_scale, c.length_scale, c.noise_w),
            (0.667, 1.0, 0.8)
        );
        assert_eq!(c.num_speakers, 1);
        assert_eq!(c.espeak_voice, "en-us");
        assert_eq!(c.phoneme_id_map[&'ˈ'], vec![120]);
    }

    #[test]
    fn ids_are_bos_pad_phoneme_pad_eos_and_unknowns_are_skipped() {
        let c = VoiceConfig::from_json(SMALL).unwrap();
        let out = c.phoneme_ids("ˈa a☃");
        assert_eq!(out.ids, vec![1, 0, 120, 0, 14, 0, 3, 0, 14, 0, 2]);
        assert_eq!(out.missing, vec!['☃']);
        assert_eq!(c.phoneme_ids("").ids, vec![1, 0, 2]);
    }

    #[test]
    fn bad_configs_are_errors_naming_the_problem() {
        let cases = [
            ("not json", "not JSON"),
            (r#"{"audio": {}}"#, "audio.sample_rate is missing"),
            (
                &SMALL.replace("22050", "-3"),
                "audio.sample_rate -3 is not a rate",
            ),
            (&SMALL.replace("\"espeak\",", "\"text\","), "phoneme_type"),
            (&SMALL.replace("\"^\": [1],", ""), "has no '^'"),
            (
                &SMALL.replace("\"a\": [14]", "\"ab\": [14]"),
                "not one codepoint",
            ),
            (&SMALL.replace("\"a\": [14]", "\"a\": []"), "not a list"),
            (
                &SMALL.replace("\"noise_w\": 0.8", "\"noise_w\": \"x\""),
                "noise_w is not a number",
            ),
        ];
        for (text, want) in cases {
            let err = VoiceConfig::from_json(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
