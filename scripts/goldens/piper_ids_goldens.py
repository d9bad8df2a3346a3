"""Golden Piper phoneme-id sequences from piper-phonemize (the library Piper
itself uses; it bundles its own espeak-ng), for the local TTS tests.

For each text: the sentences Piper would synthesise, each as its phoneme string
(codepoints joined) and the ids `phoneme_ids_espeak` gives (BOS, pad after each
phoneme, EOS). Written to crates/brisvox-models/tests/golden/piper/ids.json.
Run by scripts/goldens/make-piper-goldens.sh.
"""
import json
import sys

import piper_phonemize
from piper_phonemize import phoneme_ids_espeak, phonemize_espeak

TEXTS = [
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "I can help you with that: first, tell me your name; then we'll start.",
    "Is it raining in Paris?",
    "Thanks for calling, goodbye!",
    "It is twelve thirty five.",
    "Dr. Smith will see you now.",
    "Well... I'm not sure.",
]


def main(out: str) -> None:
    cases = []
    for text in TEXTS:
        sentences = phonemize_espeak(text, "en-us")
        cases.append(
            {
                "text": text,
                "sentences": [
                    {"phonemes": "".join(s), "ids": phoneme_ids_espeak(s)}
                    for s in sentences
                ],
            }
        )
    doc = {
        "made_by": "scripts/goldens/make-piper-goldens.sh",
        "piper_phonemize": getattr(piper_phonemize, "__version__", "1.1.0"),
        "voice": "en-us",
        "cases": cases,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
