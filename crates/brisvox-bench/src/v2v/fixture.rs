//! Speech fixtures: a PCM16 mono WAV and its JSON sidecar (`fixtures/README.md`)
//! with the ground-truth start and end of every utterance.

use std::path::Path;

/// One utterance of a fixture: a turn of the caller.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Utterance {
    /// Onset of speech, milliseconds from the start of the file.
    pub(crate) start_ms: f64,
    /// End of speech (the reference point of V2V), milliseconds from the start.
    pub(crate) end_ms: f64,
    /// Language tag of the sidecar (`en`, ...); empty when absent.
    pub(crate) language: String,
}

/// The parts of a sidecar the benchmark uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sidecar {
    /// Fixture name (`en_two_utterances`).
    pub(crate) name: String,
    /// Sample rate of the WAV, Hz.
    pub(crate) sample_rate_hz: u32,
    /// Utterances in time order.
    pub(crate) utterances: Vec<Utterance>,
}

/// A fixture loaded into memory.
#[derive(Debug, Clone)]
pub(crate) struct Fixture {
    /// Its sidecar.
    pub(crate) sidecar: Sidecar,
    /// The PCM16 samples, mono.
    pub(crate) samples: Vec<i16>,
}

impl Fixture {
    /// Length of the audio, milliseconds.
    pub(crate) fn duration_ms(&self) -> f64 {
        self.samples.len() as f64 * 1000.0 / f64::from(self.sidecar.sample_rate_hz)
    }
}

/// Parses a sidecar; checks that utterances are ordered and well formed.
pub(crate) fn parse_sidecar(text: &str) -> Result<Sidecar, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("sidecar is not JSON: {e}"))?;
    let name = v["name"].as_str().ok_or("sidecar: no name")?.to_string();
    let rate = v["sample_rate_hz"]
        .as_u64()
        .ok_or("sidecar: no sample_rate_hz")?;
    let rate = u32::try_from(rate).map_err(|_| format!("sidecar: bad sample_rate_hz {rate}"))?;
    let list = v["utterances"]
        .as_array()
        .ok_or("sidecar: no utterances array")?;
    let mut utterances = Vec::with_capacity(list.len());
    for (i, u) in list.iter().enumerate() {
        let start_ms = u["start_ms"]
            .as_f64()
            .ok_or(format!("sidecar: utterance {i} has no start_ms"))?;
        let end_ms = u["end_ms"]
            .as_f64()
            .ok_or(format!("sidecar: utterance {i} has no end_ms"))?;
        if !(start_ms >= 0.0 && end_ms > start_ms) {
            return Err(format!(
                "sidecar: utterance {i}: start {start_ms} / end {end_ms}"
            ));
        }
        if let Some(prev) = utterances.last().map(|p: &Utterance| p.end_ms)
            && start_ms < prev
        {
            return Err(format!(
                "sidecar: utterance {i} starts before the previous end"
            ));
        }
        let language = u["language"].as_str().unwrap_or("").to_string();
        utterances.push(Utterance {
            start_ms,
            end_ms,
            language,
        });
    }
    if utterances.is_empty() {
        return Err("sidecar: no utterances".into());
    }
    Ok(Sidecar {
        name,
        sample_rate_hz: rate,
        utterances,
    })
}

/// Loads `NAME.wav` and its sidecar `NAME.json` next to it.
pub(crate) fn load(wav: &Path) -> Result<Fixture, String> {
    let side_path = wav.with_extension("json");
    let text =
        std::fs::read_to_string(&side_path).map_err(|e| format!("{}: {e}", side_path.display()))?;
    let sidecar = parse_sidecar(&text).map_err(|e| format!("{}: {e}", side_path.display()))?;
    let mut reader = hound::WavReader::open(wav).map_err(|e| format!("{}: {e}", wav.display()))?;
    let spec = reader.spec();
    if spec.channels != 1 || spec.bits_per_sample != 16 {
        return Err(format!("{}: need PCM16 mono", wav.display()));
    }
    if spec.sample_rate != sidecar.sample_rate_hz {
        return Err(format!(
            "{}: WAV rate {} Hz, sidecar {} Hz",
            wav.display(),
            spec.sample_rate,
            sidecar.sample_rate_hz
        ));
    }
    let samples = reader
        .samples::<i16>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", wav.display()))?;
    Ok(Fixture { sidecar, samples })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"{"name":"x","sample_rate_hz":16000,"duration_ms":5000.0,
      "utterances":[{"transcript":"a","language":"en","start_ms":498.0,"end_ms":3068.0},
                    {"transcript":"b","start_ms":3500.0,"end_ms":4000.5}]}"#;

    #[test]
    fn a_sidecar_gives_its_utterances_in_order() {
        let s = parse_sidecar(TWO).unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.sample_rate_hz, 16000);
        assert_eq!(s.utterances.len(), 2);
        assert_eq!(s.utterances[0].end_ms, 3068.0);
        assert_eq!(s.utterances[0].language, "en");
        assert_eq!(s.utterances[1].language, "");
        assert_eq!(s.utterances[1].end_ms, 4000.5);
    }

    #[test]
    fn overlapping_or_empty_utterances_are_refused() {
        let overlap = TWO.replace("3500.0", "3000.0");
        assert!(
            parse_sidecar(&overlap)
                .unwrap_err()
                .contains("before the previous end")
        );
        let reversed = TWO.replace("\"end_ms\":3068.0", "\"end_ms\":400.0");
        assert!(parse_sidecar(&reversed).is_err());
        let none = r#"{"name":"x","sample_rate_hz":16000,"utterances":[]}"#;
        assert!(parse_sidecar(none).is_err());
        assert!(parse_sidecar("[1]").is_err());
    }

    #[test]
    fn the_repository_fixture_loads() {
        let wav =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/en_two_utterances.wav");
        let f = load(&wav).unwrap();
        assert_eq!(f.sidecar.utterances.len(), 2);
        assert!(
            (f.duration_ms() - 11297.0).abs() < 1.0,
            "{}",
            f.duration_ms()
        );
    }
}
