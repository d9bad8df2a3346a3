#!/usr/bin/env python3
"""Speech fixtures for brisvox: builder and ground-truth ("energy-v1").

Python 3.11 standard library only (no numpy). sox is used only to resample
the 8 kHz telephone prompts to 16 kHz.

Usage:
  fixtures_truth.py build OUTDIR      build all fixtures + sidecars into OUTDIR
  fixtures_truth.py --check OUTDIR    re-derive the truth of every OUTDIR/*.wav and
                                      fail if it differs from its .json by > 1 ms
  fixtures_truth.py analyze FILE.wav  print the energy-v1 segmentation of any WAV

Ground truth method "energy-v1" (see fixtures/README.md):
  * 10 ms non-overlapping frames, RMS in dBFS (full scale = 32768), floor -100 dB.
  * noise floor  = 5th percentile of the frame energies.
  * peak         = loudest frame.
  * high (core) threshold = max(floor + 15 dB, peak - 35 dB)
  * low (edge)  threshold = max(floor + 8 dB,  peak - 50 dB, -60 dBFS)
  * runs = maximal runs of frames >= low threshold; a "core" run contains at
    least 3 consecutive frames (30 ms) >= high threshold (hysteresis: the core
    finds speech, the low threshold finds its edges).
  * runs separated by < 250 ms of sub-threshold frames are grouped (gaps
    between words do not end speech; a silence >= 250 ms does). A group with
    at least one core run is a speech segment from the first frame of its
    first core run to the last frame of its last core run; groups without a
    core (clicks, breaths, noise bumps) are ignored. The edges are then
    extended over neighbouring non-core runs that lie within 50 ms and reach
    high threshold - 4 dB (soft word endings dipping under the low threshold).
  * onset/offset are refined to 1 ms with a 10 ms window sliding in 1 ms
    steps: onset = start of the earliest window (starting at most 10 ms before
    the first speech frame) whose RMS >= low threshold; offset = end of the
    latest window (ending at most 10 ms after the last speech frame) whose
    RMS >= low threshold.
  * segments separated by < 1000 ms belong to the same utterance (turn); the
    silences between them (250..1000 ms) are reported as inner `pauses`.
"""
import array
import json
import math
import os
import random
import subprocess
import sys
import wave

METHOD = "energy-v1"
FRAME_MS = 10
SUB_MS = 1
FLOOR_PERCENTILE = 5
HIGH_OVER_FLOOR_DB = 15.0
HIGH_UNDER_PEAK_DB = 35.0
LOW_OVER_FLOOR_DB = 8.0
LOW_UNDER_PEAK_DB = 50.0
LOW_ABS_DB = -60.0
MIN_CORE_FRAMES = 3
MIN_SILENCE_MS = 250
ATTACH_GAP_MS = 50
ATTACH_BELOW_HI_DB = 4.0
TURN_GAP_MS = 1000
DB_MIN = -100.0
CHECK_TOL_MS = 1.0

LIBRIVOX_DIR = "/usr/share/pocketsphinx/test/data/librivox"
ALLISON_DIR = "/usr/share/asterisk/sounds/en_US_f_Allison"
ALLISON_TXT = "/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"

LIBRIVOX_IDS = ["0870", "0880", "0890", "0920", "0930"]
# Allison prompts: full sentences, 1.5-4 s, clear ending (statements + questions).
PHONE_PROMPTS = [
    "all-circuits-busy-now",
    "cannot-complete-as-dialed",
    "please-try-call-later",
    "pls-hold-while-try",
    "vm-sorry",
    "conf-noempty",
    "vm-savefolder",   # question
    "vm-changeto",     # question
]
# More Allison prompts, 8 kHz only: the telephone call that went unanswered
# through the local demo (issue 17), kept for the /twilio test of that call.
PHONE_PROMPTS_8K_ONLY = [
    "vm-nobodyavail",
    "tt-weasels",
    "check-number-dial-again",
]

LIBRIVOX_SOURCE = "Debian pocketsphinx-testdata: /usr/share/pocketsphinx/test/data/librivox/"
LIBRIVOX_LICENCE = ("LibriVox recording (public domain) of Jane Austen, 'Sense and Sensibility' ch. 1 "
                    "(public domain text), as shipped in Debian pocketsphinx-testdata "
                    "(package licence BSD-2, Copyright 1995-2014 Carnegie Mellon University, "
                    "2014-2015 Alpha Cephei Inc.; see fixtures/LICENSES/pocketsphinx-testdata.copyright)")
LIBRIVOX_ATTRIB = ("Audio: LibriVox volunteer reading of 'Sense and Sensibility' (public domain), "
                   "via CMU Sphinx pocketsphinx test data (Debian package pocketsphinx-testdata)")
ALLISON_LICENCE = ("CC-BY-SA-3.0 (see fixtures/LICENSES/asterisk-core-sounds-en.copyright); "
                   "this fixture is distributed under the same licence")
ALLISON_ATTRIB = ("Asterisk core sounds (English), recorded by Allison Smith (http://www.theivrvoice.com), "
                  "financial contributions by Digium, Inc. (http://www.digium.com); "
                  "Copyright 2003-2010 Allison Smith; licensed CC-BY-SA-3.0. "
                  "Source: Debian package asterisk-core-sounds-en-wav, "
                  "/usr/share/asterisk/sounds/en_US_f_Allison/")


# ----------------------------------------------------------------------------- WAV I/O

def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: need PCM16 mono")
        sr = w.getframerate()
        data = w.readframes(w.getnframes())
    a = array.array("h")
    a.frombytes(data)
    if sys.byteorder == "big":
        a.byteswap()
    return sr, list(a)


def write_wav(path, sr, samples):
    a = array.array("h", (max(-32768, min(32767, int(round(s)))) for s in samples))
    if sys.byteorder == "big":
        a.byteswap()
    tmp = path + ".tmp"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(a.tobytes())
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- energy-v1

def _db(sumsq, n):
    if n <= 0 or sumsq <= 0:
        return DB_MIN
    return max(DB_MIN, 10.0 * math.log10(sumsq / n / (32768.0 * 32768.0)))


def frame_db(x, sr):
    n = sr * FRAME_MS // 1000
    out = []
    for i in range(0, len(x) - n + 1, n):
        s = 0
        for v in x[i:i + n]:
            s += v * v
        out.append(_db(s, n))
    return out


def analyze(x, sr):
    """Return dict with floor/peak/thresholds, per-frame dB, segments [(s,e) samples]."""
    fl = sr * FRAME_MS // 1000
    db = frame_db(x, sr)
    sd = sorted(db)
    floor = sd[(len(sd) * FLOOR_PERCENTILE) // 100]
    peak = sd[-1]
    hi = max(floor + HIGH_OVER_FLOOR_DB, peak - HIGH_UNDER_PEAK_DB)
    lo = max(floor + LOW_OVER_FLOOR_DB, peak - LOW_UNDER_PEAK_DB, LOW_ABS_DB)
    # runs >= low threshold; a run is a "core" run if it holds >= MIN_CORE_FRAMES
    # consecutive frames >= high threshold
    runs = []
    i, n = 0, len(db)
    while i < n:
        if db[i] >= lo:
            j = i
            while j < n and db[j] >= lo:
                j += 1
            run, best = 0, 0
            for k in range(i, j):
                run = run + 1 if db[k] >= hi else 0
                best = max(best, run)
            runs.append((i, j - 1, best >= MIN_CORE_FRAMES))  # inclusive frame indices
            i = j
        else:
            i += 1
    # group runs separated by < MIN_SILENCE_MS of sub-threshold frames (weak
    # non-core runs bridge, e.g. a soft nasal between words); a group with at
    # least one core run is speech, spanning its first to its last core run.
    min_sil = MIN_SILENCE_MS // FRAME_MS
    groups = []
    for r in runs:
        if groups and (r[0] - groups[-1][-1][1] - 1) < min_sil:
            groups[-1].append(r)
        else:
            groups.append([r])
    # edges: from the first to the last core run, extended over neighbouring
    # non-core runs that start/end within ATTACH_GAP_MS of the current edge and
    # reach hi - ATTACH_BELOW_HI_DB (soft word endings such as a final nasal
    # that dip just under the low threshold for a frame).
    att = ATTACH_GAP_MS // FRAME_MS
    merged = []
    for g in groups:
        ci = [k for k, r in enumerate(g) if r[2]]
        if not ci:
            continue
        k0, k1 = ci[0], ci[-1]
        while k0 > 0 and g[k0][0] - g[k0 - 1][1] - 1 <= att and \
                max(db[g[k0 - 1][0]:g[k0 - 1][1] + 1]) >= hi - ATTACH_BELOW_HI_DB:
            k0 -= 1
        while k1 < len(g) - 1 and g[k1 + 1][0] - g[k1][1] - 1 <= att and \
                max(db[g[k1 + 1][0]:g[k1 + 1][1] + 1]) >= hi - ATTACH_BELOW_HI_DB:
            k1 += 1
        merged.append((g[k0][0], g[k1][1]))
    # refine to SUB_MS with a 10 ms window sliding in 1 ms steps: onset = start
    # of the earliest window starting in [onset frame - 10 ms, onset frame] whose
    # RMS >= low threshold; offset = end of the latest window ending in
    # [offset frame end, offset frame end + 10 ms] whose RMS >= low threshold.
    sub = sr * SUB_MS // 1000

    def win_db(a):
        a = max(0, a)
        b = min(len(x), a + fl)
        s = 0
        for v in x[a:b]:
            s += v * v
        return _db(s, b - a)

    segs = []
    for f0, f1 in merged:
        s0 = f0 * fl
        start = s0
        for a in range(max(0, s0 - fl), s0 + 1, sub):
            if win_db(a) >= lo:
                start = a
                break
        e0 = (f1 + 1) * fl  # end sample of the last frame
        end = e0
        for b in range(min(len(x), e0 + fl), e0 - 1, -sub):
            if win_db(b - fl) >= lo:
                end = b
                break
        segs.append((start, end))
    return {"floor_db": floor, "peak_db": peak, "hi_db": hi, "lo_db": lo,
            "frame_db": db, "segments": segs}


def utterances_from(segs, sr):
    """Group segments into utterances (gap < TURN_GAP_MS); return list of
    {start_ms, end_ms, pauses:[{start_ms,end_ms}]}."""
    turn = TURN_GAP_MS * sr // 1000
    utts = []
    for s, e in segs:
        if utts and s - utts[-1]["_e"] < turn:
            u = utts[-1]
            u["pauses"].append({"start_ms": ms(u["_e"], sr), "end_ms": ms(s, sr)})
            u["_e"] = e
        else:
            utts.append({"_s": s, "_e": e, "pauses": []})
    out = []
    for u in utts:
        out.append({"start_ms": ms(u["_s"], sr), "end_ms": ms(u["_e"], sr), "pauses": u["pauses"]})
    return out


def ms(samples, sr):
    return round(samples * 1000.0 / sr, 1)


def truth_of(x, sr):
    a = analyze(x, sr)
    return a, utterances_from(a["segments"], sr)


# ----------------------------------------------------------------------------- composition helpers

def quiet_runs(x, sr, a, margin_ms=50, min_ms=50):
    """Stretches of background noise: frames outside speech (+margin) with
    energy <= floor + 5 dB, at least min_ms long. Returns [(start,end)] samples."""
    fl = sr * FRAME_MS // 1000
    db = a["frame_db"]
    marg = margin_ms * sr // 1000
    ok = []
    for i, d in enumerate(db):
        s, e = i * fl, (i + 1) * fl
        near = any(s < se + marg and e > ss - marg for ss, se in a["segments"])
        ok.append((not near) and d <= a["floor_db"] + 5.0)
    runs = []
    i = 0
    while i < len(ok):
        if ok[i]:
            j = i
            while j < len(ok) and ok[j]:
                j += 1
            if (j - i) * FRAME_MS >= min_ms:
                runs.append((i * fl, j * fl))
            i = j
        else:
            i += 1
    if not runs:
        raise SystemExit("no quiet stretch found for the noise bed")
    return runs


def noise_bed(pools, n, sr, seed, chunk_ms=50, xf_ms=10):
    """n samples of background noise: random 50 ms chunks copied from quiet
    stretches of the source clips, joined with 10 ms equal-power crossfades.
    pools: list of (samples, [(s,e)...]). Deterministic for a given seed."""
    rng = random.Random(seed)
    chunk = chunk_ms * sr // 1000
    xf = xf_ms * sr // 1000
    cands = []
    for x, runs in pools:
        for s, e in runs:
            if e - s >= chunk:
                cands.append((x, s, e))
    out = []
    while len(out) < n + chunk:
        x, s, e = cands[int(rng.random() * len(cands))]
        off = s + int(rng.random() * (e - s - chunk + 1))
        piece = [float(v) for v in x[off:off + chunk]]
        if not out:
            out = piece
            continue
        tail = len(out) - xf
        for k in range(xf):
            t = (k + 0.5) / xf
            out[tail + k] = out[tail + k] * math.cos(t * math.pi / 2) + piece[k] * math.sin(t * math.pi / 2)
        out.extend(piece[xf:])
    return out[:n]


def paste(buf, piece, at, sr, xf_ms=10):
    """Overwrite buf[at:at+len(piece)] with piece, equal-power crossfading the
    first/last xf_ms against what is already in buf (the noise bed)."""
    xf = xf_ms * sr // 1000
    n = len(piece)
    for k in range(n):
        if k < xf:
            t = (k + 0.5) / xf
        elif k >= n - xf:
            t = (n - k - 0.5) / xf
        else:
            buf[at + k] = float(piece[k])
            continue
        buf[at + k] = buf[at + k] * math.cos(t * math.pi / 2) + piece[k] * math.sin(t * math.pi / 2)


def one_segment(a, path):
    segs = a["segments"]
    return segs[0][0], segs[-1][1]


# ----------------------------------------------------------------------------- build

def librivox_path(i):
    return os.path.join(LIBRIVOX_DIR, f"sense_and_sensibility_01_austen_64kb-{i}.wav")


def librivox_transcripts():
    t = {}
    with open(os.path.join(LIBRIVOX_DIR, "transcription")) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            text, fid = line.rsplit("(", 1)
            fid = fid.rstrip(")").strip()
            text = text.replace("<s>", "").replace("</s>", "").strip()
            t[fid.rsplit("-", 1)[1]] = text
    return t


def allison_transcripts():
    import gzip
    t = {}
    with gzip.open(ALLISON_TXT, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(";") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            t[k.strip()] = v.strip()
    return t


def sidecar(path, name, sr, x, transcripts, source, licence, attribution, extra=None,
            expect_utts=None, language="en"):
    a, utts = truth_of(x, sr)
    if expect_utts is not None and len(utts) != expect_utts:
        raise SystemExit(f"{name}: expected {expect_utts} utterance(s), energy-v1 found {len(utts)}: {utts}")
    if len(transcripts) != len(utts):
        raise SystemExit(f"{name}: {len(transcripts)} transcripts but {len(utts)} utterances: {utts}")
    pauses = []
    ulist = []
    for tr, u in zip(transcripts, utts):
        ulist.append({"transcript": tr, "language": language,
                      "start_ms": u["start_ms"], "end_ms": u["end_ms"]})
        pauses.extend(u["pauses"])
    d = {"name": name, "sample_rate_hz": sr, "duration_ms": ms(len(x), sr), "utterances": ulist}
    if pauses:
        d["pauses"] = pauses
    d.update({"source": source, "licence": licence, "attribution": attribution,
              "truth_method": METHOD,
              "noise_floor_dbfs": round(a["floor_db"], 1), "peak_dbfs": round(a["peak_db"], 1)})
    if extra:
        d.update(extra)
    with open(path + ".tmp", "w") as f:
        json.dump(d, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
    return d


def build(out):
    os.makedirs(out, exist_ok=True)
    ltr = librivox_transcripts()
    atr = allison_transcripts()
    clips = {}
    for i in LIBRIVOX_IDS:
        sr, x = read_wav(librivox_path(i))
        assert sr == 16000
        a = analyze(x, sr)
        clips[i] = (x, a)
        name = f"librivox_{i}"
        write_wav(os.path.join(out, name + ".wav"), sr, x)
        sidecar(os.path.join(out, name + ".json"), name, sr, x, [ltr[i]],
                LIBRIVOX_SOURCE + os.path.basename(librivox_path(i)) + " (copied verbatim)",
                LIBRIVOX_LICENCE, LIBRIVOX_ATTRIB, expect_utts=1)

    for p in PHONE_PROMPTS:
        src = os.path.join(ALLISON_DIR, p + ".wav")
        sr, x = read_wav(src)
        assert sr == 8000
        base = "phone_" + p.replace("-", "_")
        n8 = base + "_8k"
        write_wav(os.path.join(out, n8 + ".wav"), sr, x)
        sidecar(os.path.join(out, n8 + ".json"), n8, sr, x, [atr[p]],
                f"Debian asterisk-core-sounds-en-wav: en_US_f_Allison/{p}.wav (samples copied verbatim)",
                ALLISON_LICENCE, ALLISON_ATTRIB, expect_utts=1)
        n16 = base + "_16k"
        dst = os.path.join(out, n16 + ".wav")
        # -D: no dither, -R: repeatable; high-quality (very high, -v) resampler
        subprocess.run(["sox", "-D", "-R", src, "-r", "16000", "-b", "16", dst + ".sox.wav", "rate", "-v"],
                       check=True)
        sr16, y = read_wav(dst + ".sox.wav")
        os.remove(dst + ".sox.wav")
        write_wav(dst, sr16, y)  # rewrite with a plain 44-byte header
        sidecar(os.path.join(out, n16 + ".json"), n16, sr16, y, [atr[p]],
                f"Debian asterisk-core-sounds-en-wav: en_US_f_Allison/{p}.wav, "
                "resampled 8 kHz -> 16 kHz with `sox -D -R in.wav -r 16000 out.wav rate -v` (modified from the original)",
                ALLISON_LICENCE, ALLISON_ATTRIB, expect_utts=1)

    for p in PHONE_PROMPTS_8K_ONLY:
        src = os.path.join(ALLISON_DIR, p + ".wav")
        sr, x = read_wav(src)
        assert sr == 8000
        n8 = "phone_" + p.replace("-", "_") + "_8k"
        write_wav(os.path.join(out, n8 + ".wav"), sr, x)
        sidecar(os.path.join(out, n8 + ".json"), n8, sr, x, [atr[p]],
                f"Debian asterisk-core-sounds-en-wav: en_US_f_Allison/{p}.wav (samples copied verbatim)",
                ALLISON_LICENCE, ALLISON_ATTRIB, expect_utts=1)

    sr = 16000
    comp = compose_all(clips, ltr, sr)
    for name, (buf, transcripts, source, expect, extra, verify) in comp.items():
        write_wav(os.path.join(out, name + ".wav"), sr, buf)
        d = sidecar(os.path.join(out, name + ".json"), name, sr, buf, transcripts,
                    LIBRIVOX_SOURCE + source, LIBRIVOX_LICENCE, LIBRIVOX_ATTRIB,
                    expect_utts=expect, extra=extra)
        if verify:
            verify(d)


OWN_MS = 20        # how much of a clip's own signal to keep beyond its energy-v1 speech edges
LEAD_MS = 500      # composed fixtures: noise before the first speech onset
TAIL_MS = 1500     # composed fixtures: noise after the last speech offset


def place(pieces, bed, sr):
    """pieces: [(samples, at)] pasted over the noise bed (10 ms crossfades)."""
    buf = list(bed)
    for x, at in pieces:
        paste(buf, x, at, sr)
    return [max(-32768, min(32767, int(round(v)))) for v in buf]


def seek(make, targets, sr, iters=6):
    """Re-build a composition so that the energy-v1 truth of the *final file*
    is close to the target lead-in / gaps / tail. make(adj) -> (buf, extra);
    targets(buf, utts) -> errors in samples, one per entry of adj. Adjustments
    are whole 10 ms frames (keeps each clip's phase against the frame grid, so
    its edges move only through the file's noise floor); the candidate with the
    smallest worst error is kept (deterministic)."""
    fl = sr * FRAME_MS // 1000
    adj, best = None, None
    for _ in range(iters):
        buf, extra = make(adj)
        _, utts = truth_of(buf, sr)
        err = targets(buf, utts)
        if adj is None:
            adj = [0] * len(err)
        worst = max(abs(v) for v in err)
        if best is None or worst < best[0]:
            best = (worst, buf, extra)
        if worst <= fl // 2:
            break
        new = [a + int(round(v / fl)) * fl for a, v in zip(adj, err)]
        if new == adj:
            break
        adj = new
    return best[1], best[2]


def compose_all(clips, ltr, sr):
    lead, tail, own = LEAD_MS * sr // 1000, TAIL_MS * sr // 1000, OWN_MS * sr // 1000
    out = {}

    def pool(i):
        x, a = clips[i]
        return (x, quiet_runs(x, sr, a))

    def seg(i):
        x, a = clips[i]
        return x, a["segments"][0][0], a["segments"][-1][1]

    # --- en_two_utterances: 0880, 4 s, 0930
    xa, sa, ea = seg("0880")
    xb, sb, eb = seg("0930")
    gap = 4000 * sr // 1000

    def make_two(adj):
        adj = adj or [0, 0, 0]
        pa = lead + adj[0]
        pb = pa + (ea - sa) + gap + adj[1]
        total = pb + (eb - sb) + tail + adj[2]
        bed = noise_bed([pool("0880"), pool("0930")], total, sr, seed=2)
        return place([(xa[sa - own:ea + own], pa - own), (xb[sb - own:eb + own], pb - own)], bed, sr), None

    def tgt_two(buf, utts):
        if len(utts) != 2:
            raise SystemExit(f"en_two_utterances: {len(utts)} utterances")
        u1, u2 = utts
        f = lambda v: int(round(v * sr / 1000.0))
        return [lead - f(u1["start_ms"]), gap - (f(u2["start_ms"]) - f(u1["end_ms"])),
                tail - (len(buf) - f(u2["end_ms"]))]

    buf, _ = seek(make_two, tgt_two, sr)
    out["en_two_utterances"] = (
        buf, [ltr["0880"], ltr["0930"]],
        "sense_and_sensibility_01_austen_64kb-0880.wav + ...-0930.wav (composed)", 2,
        {"composition": "two separate turns: 0.5 s lead-in, utterance 0880, 4.0 s of silence (energy-v1 end "
                        "of the first to energy-v1 start of the second, measured on this file), utterance "
                        "0930, 1.5 s after the end. Each clip keeps 20 ms of its own signal beyond its "
                        "speech edges (10 ms crossfades); everything else is background noise copied from "
                        "quiet stretches of both clips (random 50 ms chunks, 10 ms equal-power crossfades)."},
        None)

    # --- en_pause_in_sentence: 0920 with 400 ms of its own background noise inserted between words
    x, s, e = seg("0920")
    a = clips["0920"][1]
    fl = sr * FRAME_MS // 1000
    db = a["frame_db"]
    f_lo = (s + (e - s) * 3 // 10) // fl
    f_hi = (s + (e - s) * 7 // 10) // fl
    best = min(range(f_lo, f_hi - 2), key=lambda k: (db[k] + db[k + 1] + db[k + 2], k))
    ins = (best + 1) * fl + fl // 2      # middle of the quietest 30 ms window between words
    pause = 400 * sr // 1000
    holder = {}

    def make_pause(adj):
        adj = adj or [0, 0]
        p0 = lead + adj[0]
        ins_at = p0 + (ins - s)
        total = ins_at + pause + (e - ins) + tail + adj[1]
        bed = noise_bed([pool("0920")], total, sr, seed=3)
        holder["ins_at"] = ins_at
        return place([(x[s - own:ins], p0 - own), (x[ins:e + own], ins_at + pause)], bed, sr), None

    def tgt_pause(buf, utts):
        if len(utts) != 1:
            raise SystemExit(f"en_pause_in_sentence: {len(utts)} utterances")
        f = lambda v: int(round(v * sr / 1000.0))
        return [lead - f(utts[0]["start_ms"]), tail - (len(buf) - f(utts[0]["end_ms"]))]

    buf, _ = seek(make_pause, tgt_pause, sr)
    ins_at = holder["ins_at"]
    ip = {"start_ms": ms(ins_at, sr), "end_ms": ms(ins_at + pause, sr)}

    def verify_pause(d):
        ps = d.get("pauses", [])
        if len(ps) != 1 or not (ps[0]["start_ms"] <= ip["start_ms"] + 15 and ps[0]["end_ms"] >= ip["end_ms"] - 15):
            raise SystemExit(f"en_pause_in_sentence: inserted pause {ip} not found as the one pause: {ps}")

    out["en_pause_in_sentence"] = (
        buf, [ltr["0920"]],
        "sense_and_sensibility_01_austen_64kb-0920.wav (pause inserted)", 1,
        {"inserted_pause": ip,
         "composition": "ONE sentence = ONE turn with a hesitation: 400 ms of the clip's own background "
                        "noise (random 50 ms chunks from its quiet stretches, 10 ms equal-power crossfades) "
                        "inserted in the middle of the quietest 30 ms between two words in the middle 30-70% "
                        "of the sentence. `pauses` is the whole silence energy-v1 sees (natural word gap + "
                        "inserted noise), `inserted_pause` is the inserted stretch alone. 0.5 s lead-in, "
                        "1.5 s after the end."},
        verify_pause)

    # --- en_long_question: 0920 + 0930 as one long utterance, 150 ms between them
    xa, sa, ea = seg("0920")
    xb, sb, eb = seg("0930")
    g = 150 * sr // 1000

    def make_long(adj):
        adj = adj or [0, 0]
        pa = lead + adj[0]
        pb = pa + (ea - sa) + g
        total = pb + (eb - sb) + tail + adj[1]
        bed = noise_bed([pool("0920"), pool("0930")], total, sr, seed=4)
        return place([(xa[sa - own:ea + own], pa - own), (xb[sb - own:eb + own], pb - own)], bed, sr), None

    buf, _ = seek(make_long, tgt_pause, sr)
    out["en_long_question"] = (
        buf, [ltr["0920"] + " " + ltr["0930"]],
        "sense_and_sensibility_01_austen_64kb-0920.wav + ...-0930.wav (composed)", 1,
        {"composition": "two consecutive sentences spoken as ONE long utterance (a long statement, not a "
                        "question despite the name): 0920 then 0930 with 150 ms from the standalone "
                        "energy-v1 end of 0920 to the standalone energy-v1 start of 0930 (20 ms of each "
                        "clip's own signal beyond its edges, background noise in between), 0.5 s lead-in, "
                        "1.5 s after; background noise copied from quiet stretches of both clips."},
        None)
    return out


# ----------------------------------------------------------------------------- table / check

def table(dirpath):
    rows = []
    for fn in sorted(os.listdir(dirpath)):
        if not fn.endswith(".wav"):
            continue
        sr, x = read_wav(os.path.join(dirpath, fn))
        a, utts = truth_of(x, sr)
        for k, u in enumerate(utts):
            p = "; ".join(f"{q['start_ms']:.1f}-{q['end_ms']:.1f}" for q in u["pauses"])
            rows.append((fn[:-4] + (f" #{k + 1}" if len(utts) > 1 else ""), sr, ms(len(x), sr),
                         u["start_ms"], u["end_ms"], round(u["end_ms"] - u["start_ms"], 1),
                         round(a["peak_db"], 1), round(a["floor_db"], 1), round(a["lo_db"], 1), p or "-"))
    hdr = "| fixture | Hz | file ms | start ms | end ms | speech ms | peak dBFS | floor dBFS | edge thr dBFS | inner pauses ms |"
    lines = [hdr, "|" + "---|" * 10]
    for r in rows:
        lines.append("| " + " | ".join(str(v) for v in r) + " |")
    return "\n".join(lines)


def check(dirpath):
    bad = 0
    n = 0
    for fn in sorted(os.listdir(dirpath)):
        if not fn.endswith(".wav"):
            continue
        n += 1
        base = os.path.join(dirpath, fn[:-4])
        with open(base + ".json") as f:
            d = json.load(f)
        sr, x = read_wav(base + ".wav")
        _, utts = truth_of(x, sr)
        errs = []
        if d.get("truth_method") != METHOD:
            errs.append(f"truth_method {d.get('truth_method')} != {METHOD}")
        if d["sample_rate_hz"] != sr:
            errs.append("sample rate")
        if abs(d["duration_ms"] - ms(len(x), sr)) > CHECK_TOL_MS:
            errs.append("duration")
        if len(utts) != len(d["utterances"]):
            errs.append(f"{len(utts)} utterances derived, sidecar has {len(d['utterances'])}")
        else:
            for u, v in zip(utts, d["utterances"]):
                for k in ("start_ms", "end_ms"):
                    if abs(u[k] - v[k]) > CHECK_TOL_MS:
                        errs.append(f"utterance {k}: derived {u[k]} sidecar {v[k]}")
        dp = [p for u in utts for p in u["pauses"]]
        sp = d.get("pauses", [])
        if len(dp) != len(sp):
            errs.append(f"{len(dp)} pauses derived, sidecar has {len(sp)}")
        else:
            for u, v in zip(dp, sp):
                for k in ("start_ms", "end_ms"):
                    if abs(u[k] - v[k]) > CHECK_TOL_MS:
                        errs.append(f"pause {k}: derived {u[k]} sidecar {v[k]}")
        if errs:
            bad += 1
            print(f"FAIL {fn}: " + "; ".join(errs))
    print(f"checked {n} fixtures, {bad} failed")
    return 1 if bad or n == 0 else 0


def update_readme(dirpath):
    path = os.path.join(dirpath, "README.md")
    b, e = "<!-- truth-table:begin -->", "<!-- truth-table:end -->"
    if not os.path.exists(path):
        return
    with open(path) as f:
        txt = f.read()
    if b not in txt or e not in txt:
        return
    pre, rest = txt.split(b, 1)
    _, post = rest.split(e, 1)
    new = pre + b + "\n" + table(dirpath) + "\n" + e + post
    if new != txt:
        with open(path, "w") as f:
            f.write(new)


def main(argv):
    if len(argv) == 2 and argv[0] == "--check":
        return check(argv[1])
    if len(argv) == 2 and argv[0] == "build":
        build(argv[1])
        update_readme(argv[1])
        print(table(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "table":
        print(table(argv[1]))
        return 0
    if len(argv) >= 2 and argv[0] == "analyze":
        for p in argv[1:]:
            sr, x = read_wav(p)
            a, utts = truth_of(x, sr)
            print(f"{p}: sr={sr} dur={ms(len(x), sr)} floor={a['floor_db']:.1f} peak={a['peak_db']:.1f} "
                  f"hi={a['hi_db']:.1f} lo={a['lo_db']:.1f}")
            print("  segments ms:", [(ms(s, sr), ms(e, sr)) for s, e in a["segments"]])
            print("  utterances:", json.dumps(utts))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
