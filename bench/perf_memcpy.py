#!/usr/bin/env python3
"""Who asks for the copies in a server profile (bench/framework-profile.sh).

Usage: bench/perf_memcpy.py PERF_SCRIPT_TXT
  PERF_SCRIPT_TXT: `perf script -F comm,tid,period,ip,sym --inline` of a `perf record -g`.

Counts the user samples whose leaf is memcpy, memmove or memset, and charges each to
its nearest caller that is not a copy helper, a core/alloc helper (bench/perf_split.py's
SKIP), a tracing Instrumented poll or a poll_fn. Prints the share of all samples and the
15 largest callers.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_split as ps  # noqa: E402

COPY = ("memcpy", "memmove", "memset")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    total, copies, callers = 0, 0, collections.Counter()
    for frames in ps.samples(sys.argv[1]):
        total += 1
        if frames and frames[0][0]:
            continue
        user = [sym for kernel, sym in frames if not kernel]
        if not user or not any(c in user[0] for c in COPY):
            continue
        copies += 1
        caller = next(
            (s for s in user[1:]
             if not ps.SKIP.match(s) and "Instrumented" not in s and "poll_fn" not in s),
            "?",
        )
        callers[caller[:120]] += 1
    if total == 0:
        sys.exit("perf_memcpy: no samples")
    print(f"mem* leaf: {copies} of {total} samples = {100 * copies / total:.1f} %")
    for caller, v in callers.most_common(15):
        print(v, caller)


if __name__ == "__main__":
    main()
