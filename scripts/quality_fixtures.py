#!/usr/bin/env python3
"""Conversation-quality fixtures for brisvox (fixtures/quality/): a caller who
pauses inside a sentence, answers briefly, says "mm-hmm" or coughs while the
bot speaks, or really interrupts it.

Python 3.11 standard library plus the programs sox and espeak-ng (Debian), and
the speech of the Debian packages pocketsphinx-testdata and
asterisk-core-sounds-en-wav (see fixtures/README.md). Deterministic.

Usage:
  quality_fixtures.py build OUTDIR     build OUTDIR/*.wav + *.json
  quality_fixtures.py --check OUTDIR   re-derive every sidecar's times (energy-v1)

Each fixture is composed on a noise bed (as the fixtures of fixtures_truth.py)
from placed pieces. A piece is a caller TURN (one utterance the bot must answer,
possibly with an inner pause) or an OVERLAP (a backchannel, a short "yes" or a
cough-like noise burst) placed where the bot is speaking its answer to the
previous turn. The bench agent's answer (bench/agents/quality.toml) lasts about
4.5 s and starts about 1 s after the end of a turn (3.5 s at the latest, when
the end-of-turn model waits its whole fallback), so an overlap placed 4.5 s
after a turn's end falls inside that answer, and the next turn, 9.5 s after,
comes after it.

Sidecar: the usual keys (utterances = the turns, in order, each with
start_ms/end_ms from energy-v1 of the final file; `pauses` where energy-v1 sees
them; `inserted_pauses` per turn: the silences put inside it by construction)
plus
`overlaps`: [{"kind": "backchannel"|"noise", "transcript", "start_ms",
"end_ms"}] and, per utterance, `"barge_in": true` for a turn that starts while
the bot is expected to speak (it should interrupt the bot).
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixtures_truth as ft  # noqa: E402

SR = 16000
OWN_MS = 20
LEAD_MS = 500
TAIL_MS = 1500
OVERLAP_AFTER_MS = 4500      # a turn's end to an overlap (inside the bot's answer)
NEXT_TURN_AFTER_MS = 9500   # a turn's end to the next turn (after the bot's answer)
BARGE_IN_AFTER_MS = 4500     # a turn's end to an interrupting turn
ANSWER_TAIL_MS = 6500        # silence after the last turn when the bot's answer must be heard
# Fixtures added after the first set. Seeds: 100 + the index among the first set
# (sorted), 200 + the index here, so that adding fixtures leaves the others
# byte-identical.
ADDED_LATER = ["quality_barge_in_3", "quality_barge_in_4", "quality_barge_in_5"]
ESPEAK_VOICE = "en-us"
ESPEAK_SOURCE = "espeak-ng (Debian package espeak-ng), voice en-us, 160 wpm, resampled to 16 kHz with sox"
NOISE_SOURCE = "a synthetic noise burst (seeded PRNG, 250 ms, low-passed, decaying envelope): a cough stand-in"


def clip(samples, sr=SR):
    """The speech of `samples` (energy-v1 edges) with OWN_MS of its own signal around it."""
    a = ft.analyze(samples, sr)
    if not a["segments"]:
        raise SystemExit("a clip without speech")
    s, e = a["segments"][0][0], a["segments"][-1][1]
    own = OWN_MS * sr // 1000
    s, e = max(0, s - own), min(len(samples), e + own)
    return [float(v) for v in samples[s:e]], a


def librivox(i):
    sr, x = ft.read_wav(ft.librivox_path(i))
    assert sr == SR
    return x


def resampled(path, tmp):
    out = os.path.join(tmp, "r.wav")
    subprocess.run(["sox", "-D", "-R", path, "-r", str(SR), "-b", "16", "-c", "1", out, "rate", "-v"],
                   check=True)
    sr, y = ft.read_wav(out)
    assert sr == SR
    return y


def allison(name, tmp):
    return resampled(os.path.join(ft.ALLISON_DIR, name + ".wav"), tmp)


def espeak(text, tmp, level_rms):
    raw = os.path.join(tmp, "e.wav")
    subprocess.run(["espeak-ng", "-v", ESPEAK_VOICE, "-s", "160", "-w", raw, text], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    y = resampled(raw, tmp)
    return scaled(y, level_rms)


def scaled(x, level_rms):
    c, _ = clip(x)
    rms = math.sqrt(sum(v * v for v in c) / max(1, len(c)))
    g = level_rms / rms if rms > 0 else 1.0
    return [v * g for v in x]


def noise_burst(seed, level_rms, ms=250):
    rng = random.Random(seed)
    n = ms * SR // 1000
    out, lp = [], 0.0
    for k in range(n):
        lp = 0.6 * lp + 0.4 * (rng.random() * 2 - 1)
        env = min(1.0, k / (0.01 * SR)) * math.exp(-3.0 * k / n)
        out.append(10000.0 * lp * env)
    pad = [0.0] * (OWN_MS * SR // 1000)
    return scaled(pad + out + pad, level_rms)


def speech_rms(samples):
    c, _ = clip(samples)
    return math.sqrt(sum(v * v for v in c) / len(c))


def with_pause(samples, pause_ms):
    """The clip cut at the quietest 30 ms between words in its middle 30-70 %
    and its two halves `pause_ms` apart: [(piece, offset_samples)]."""
    a = ft.analyze(samples, SR)
    s, e = a["segments"][0][0], a["segments"][-1][1]
    fl = SR * ft.FRAME_MS // 1000
    db = a["frame_db"]
    lo, hi = (s + (e - s) * 3 // 10) // fl, (s + (e - s) * 7 // 10) // fl
    best = min(range(lo, hi - 2), key=lambda k: (db[k] + db[k + 1] + db[k + 2], k))
    cut = (best + 1) * fl + fl // 2
    own = OWN_MS * SR // 1000
    first = [float(v) for v in samples[s - own:cut]]
    second = [float(v) for v in samples[cut:e + own]]
    return [(first, 0), (second, len(first) + pause_ms * SR // 1000)]


def spaced(clips, gap_ms):
    """Several clips one after the other, `gap_ms` apart: [(piece, offset)]."""
    out, at = [], 0
    for c in clips:
        out.append((c, at))
        at += len(c) + gap_ms * SR // 1000
    return out


class Plan:
    """Pieces on a timeline: each turn or overlap placed after the previous turn's end."""

    def __init__(self):
        self.items = []     # (role, parts [(samples, offset)], transcript, start_sample, extra)
        self.cursor = LEAD_MS * SR // 1000
        self.last_turn_end = None

    def _length(self, parts):
        return max(off + len(p) for p, off in parts)

    def turn(self, parts, transcript, after_ms=None, barge_in=False):
        if after_ms is not None:
            self.cursor = self.last_turn_end + after_ms * SR // 1000
        start = self.cursor
        self.items.append(("turn", parts, transcript, start, {"barge_in": barge_in}))
        self.last_turn_end = start + self._length(parts)
        self.cursor = self.last_turn_end

    def overlap(self, kind, parts, transcript, after_ms=OVERLAP_AFTER_MS, mix=False):
        start = self.last_turn_end + after_ms * SR // 1000
        self.items.append(("overlap", parts, transcript, start, {"kind": kind, "mix": mix}))

    def length(self, tail_ms):
        end = max(start + self._length(parts) for _, parts, _, start, _ in self.items)
        return end + tail_ms * SR // 1000


def compose(name, plan, tail_ms, pools, seed, meta):
    n = plan.length(tail_ms)
    bed = ft.noise_bed(pools, n, SR, seed=seed)
    pieces = []
    for _, parts, _, start, extra in plan.items:
        for p, off in parts:
            at = start + off
            if extra.get("mix"):
                # Synthetic audio has digital silence: lay it over the bed, not instead of it.
                p = [v + b for v, b in zip(p, bed[at:at + len(p)])]
            pieces.append((p, at))
    buf = ft.place(pieces, bed, SR)
    a = ft.analyze(buf, SR)
    turns, overlaps, pauses = [], [], []
    for role, parts, transcript, start, extra in plan.items:
        s0, s1 = start, start + plan._length(parts)
        segs = [(s, e) for s, e in a["segments"] if s < s1 and e > s0]
        if not segs:
            raise SystemExit(f"{name}: no speech found for {role} {transcript!r}")
        utts = ft.utterances_from(segs, SR)
        if len(utts) != 1:
            raise SystemExit(f"{name}: {role} {transcript!r} is {len(utts)} utterances: {utts}")
        u = utts[0]
        entry = {"transcript": transcript, "start_ms": u["start_ms"], "end_ms": u["end_ms"]}
        if role == "turn":
            entry["language"] = "en"
            if extra["barge_in"]:
                entry["barge_in"] = True
            gaps = [(start + off + len(p), start + off2)
                    for (p, off), (_, off2) in zip(parts, parts[1:])]
            if gaps:
                # The silences put between the parts (by construction, not energy-v1).
                entry["inserted_pauses"] = [{"start_ms": ft.ms(a, SR), "end_ms": ft.ms(b, SR)}
                                            for a, b in gaps]
            turns.append(entry)
            pauses.extend(u["pauses"])
        else:
            entry = {"kind": extra["kind"], **entry}
            overlaps.append(entry)
    assigned = sum(1 for s, e in a["segments"]
                   if any(s < st + plan._length(p) and e > st for _, p, _, st, _ in plan.items))
    if assigned != len(a["segments"]):
        raise SystemExit(f"{name}: {len(a['segments']) - assigned} segment(s) of the noise bed look like speech")
    d = {"name": name, "sample_rate_hz": SR, "duration_ms": ft.ms(len(buf), SR), "utterances": turns}
    if pauses:
        d["pauses"] = pauses
    if overlaps:
        d["overlaps"] = overlaps
    d.update(meta)
    d.update({"truth_method": ft.METHOD, "noise_floor_dbfs": round(a["floor_db"], 1),
              "peak_dbfs": round(a["peak_db"], 1)})
    return buf, d


def build(out):
    os.makedirs(out, exist_ok=True)
    ltr = ft.librivox_transcripts()
    atr = ft.allison_transcripts()
    lv = {i: librivox(i) for i in ft.LIBRIVOX_IDS}
    level = sum(speech_rms(x) for x in lv.values()) / len(lv)
    pool_of = {i: (x, ft.quiet_runs(x, SR, ft.analyze(x, SR))) for i, x in lv.items()}
    # The noise bed of every fixture comes from the quiet stretches of 0880 and
    # 0930, the quietest clips (as en_two_utterances): the clips' floors differ by
    # up to 5 dB, and a louder bed would look like speech to energy-v1.
    pools = lambda *_ids: [pool_of["0880"], pool_of["0930"]]
    sources = {"librivox": ft.LIBRIVOX_SOURCE, "allison": "Debian asterisk-core-sounds-en-wav: en_US_f_Allison "
               "(resampled 8 kHz -> 16 kHz with sox rate -v)", "espeak": ESPEAK_SOURCE, "noise": NOISE_SOURCE}
    meta = {"licence": f"{ft.LIBRIVOX_LICENCE}; Allison prompts: {ft.ALLISON_LICENCE}",
            "attribution": f"{ft.LIBRIVOX_ATTRIB}; {ft.ALLISON_ATTRIB}"}
    with tempfile.TemporaryDirectory() as tmp:
        a = lambda n: clip(allison(n, tmp))[0]
        say = lambda t: clip(espeak(t, tmp, level))[0]
        c = lambda i: clip(lv[i])[0]
        fixtures = {}

        for i, pause in (("0870", 300), ("0890", 500), ("0930", 700)):
            p = Plan()
            p.turn(with_pause(lv[i], pause), ltr[i])
            fixtures[f"quality_pause_{pause}"] = (p, TAIL_MS, pools(i), [sources["librivox"]],
                                                  f"one sentence with a {pause} ms pause inserted between two "
                                                  "words in its middle 30-70 %: ONE turn")

        p = Plan()
        p.turn([(a("hello"), 0)], atr["hello"])
        p.turn([(a("vm-no"), 0)], "No.", after_ms=NEXT_TURN_AFTER_MS)
        p.turn([(a("auth-thankyou"), 0)], atr["auth-thankyou"], after_ms=NEXT_TURN_AFTER_MS)
        p.turn(spaced([a("digits/4"), a("digits/2"), a("digits/7")], 120), "four two seven",
               after_ms=NEXT_TURN_AFTER_MS)
        fixtures["quality_short_answers"] = (p, ANSWER_TAIL_MS, pools(), [sources["allison"]],
                                             "four short answers, each its own turn, 9.5 s apart")

        for name, first, kind, words, src, nxt in (
            ("quality_backchannel_mmhmm", "0880", "backchannel", "mm-hmm", "espeak", "0930"),
            ("quality_backchannel_yeah", "0870", "backchannel", "yeah", "espeak", "0890"),
            ("quality_backchannel_okay", "0890", "backchannel", "okay", "espeak", "0880"),
            ("quality_backchannel_oh", "0930", "backchannel", "oh", "allison", "0870"),
            ("quality_short_yes_over_bot", "0920", "backchannel", "yes", "espeak", "0880"),
            ("quality_cough_over_bot", "0880", "noise", "", "noise", "0920"),
        ):
            p = Plan()
            p.turn([(c(first), 0)], ltr[first])
            if src == "espeak":
                piece = say(words)
            elif src == "allison":
                piece = a("digits/oh")
            else:
                piece = noise_burst(seed=len(name), level_rms=level)
            p.overlap(kind, [(piece, 0)], words, mix=src != "allison")
            p.turn([(c(nxt), 0)], ltr[nxt], after_ms=NEXT_TURN_AFTER_MS)
            fixtures[name] = (p, ANSWER_TAIL_MS, pools(first, nxt), [sources["librivox"], sources[src]],
                              f"a turn, then {kind} {words!r} over the bot's answer, then a second turn")

        for name, first, second in (("quality_barge_in_1", "0880", "0930"),
                                    ("quality_barge_in_2", "0890", "0870"),
                                    ("quality_barge_in_3", "0870", "0880"),
                                    ("quality_barge_in_4", "0920", "0890"),
                                    ("quality_barge_in_5", "0930", "0920")):
            p = Plan()
            p.turn([(c(first), 0)], ltr[first])
            p.turn([(c(second), 0)], ltr[second], after_ms=BARGE_IN_AFTER_MS, barge_in=True)
            fixtures[name] = (p, ANSWER_TAIL_MS, pools(first, second), [sources["librivox"]],
                              "a turn, then a real interruption of the bot's answer (a turn of its own)")

        first_set = sorted(n for n in fixtures if n not in ADDED_LATER)
        for name, (plan, tail, bed, srcs, what) in sorted(fixtures.items()):
            m = dict(meta, source="; ".join(srcs), composition=what)
            seed = 100 + first_set.index(name) if name in first_set else 200 + ADDED_LATER.index(name)
            buf, d = compose(name, plan, tail, bed, seed=seed, meta=m)
            ft.write_wav(os.path.join(out, name + ".wav"), SR, buf)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(d, f, indent=2)
                f.write("\n")
            print(f"{name}: {len(d['utterances'])} turn(s), {len(d.get('overlaps', []))} overlap(s), "
                  f"{d['duration_ms'] / 1000:.1f} s")


def check(dirpath):
    """Every turn and overlap edge re-derived from the WAV within 1 ms."""
    bad = n = 0
    for fn in sorted(os.listdir(dirpath)):
        if not fn.endswith(".wav"):
            continue
        n += 1
        base = os.path.join(dirpath, fn[:-4])
        with open(base + ".json") as f:
            d = json.load(f)
        sr, x = ft.read_wav(base + ".wav")
        a = ft.analyze(x, sr)
        want = sorted(d["utterances"] + d.get("overlaps", []), key=lambda u: u["start_ms"])
        got = []
        for u in want:
            segs = [(s, e) for s, e in a["segments"]
                    if ft.ms(e, sr) > u["start_ms"] - 5 and ft.ms(s, sr) < u["end_ms"] + 5]
            got.extend(ft.utterances_from(segs, sr) if segs else [None])
        errs = []
        if len(got) != len(want) or None in got:
            errs.append(f"{len(got)} pieces derived, sidecar has {len(want)}")
        else:
            for g, w in zip(got, want):
                for k in ("start_ms", "end_ms"):
                    if abs(g[k] - w[k]) > ft.CHECK_TOL_MS:
                        errs.append(f"{w['transcript']!r} {k}: derived {g[k]} sidecar {w[k]}")
        if errs:
            bad += 1
            print(f"FAIL {fn}: " + "; ".join(errs))
    print(f"checked {n} quality fixtures, {bad} failed")
    return 1 if bad or n == 0 else 0


def main(argv):
    if len(argv) == 2 and argv[0] == "build":
        build(argv[1])
        return check(argv[1])
    if len(argv) == 2 and argv[0] == "--check":
        return check(argv[1])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
