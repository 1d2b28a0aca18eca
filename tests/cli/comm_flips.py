#!/usr/bin/env python3
"""Issue 27: byte-flipped /comm groups (issue 27's hostile-user defects).

Every reader of a results file's /comm groups (report, compare, merge, plan --calibrate) reads them in
the forked reader, under its memory cap and watchdog. For each of a fixed set of seeds, some bytes of
comm.h5 (a /comm group and a transformer run, tests/cli/report_fixtures.cpp) are flipped where the
/comm group lives, and each command must end with exit 0 (the flip hit nothing that matters) or 2 with
one `pipebench: error:` line (after warnings, if any), never a signal or exit 1, within a time limit, and its process tree must
stay under a memory bound.

Usage: comm_flips.py PIPEBENCH FIXTURE_DIR WORKDIR [--seeds N]
"""
import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import time

LIMIT_S = 15
MAX_RSS_MB = 2048


def commands(b, f, fix, work):
    out = os.path.join(work, "merged.h5")
    return {
        "report": [b, "report", f],
        "compare": [b, "compare", "--allow-different", f, os.path.join(fix, "comm_b.h5")],
        "merge": [b, "merge", out, f],
        "plan --calibrate": [b, "plan", "--layers", "4", "--hidden", "256", "--heads", "4", "--seq", "128", "--vocab",
                             "1000", "--gpus", "2", "--global-batch", "8", "--calibrate", f],
    }


def flip(data, rng, lo, hi, n):
    for _ in range(n):
        i = rng.randrange(lo, hi)
        data[i] ^= 1 << rng.randrange(8)


def run_one(cmd):
    """(exit code or -signal, seconds, max RSS of the process and its children in MB, stderr)"""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return None, LIMIT_S, 0, b"(killed after the time limit)"
    took = time.monotonic() - start
    # RUSAGE_CHILDREN's maxrss is the largest of the waited-for descendants: read before and after
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return p.returncode, took, rss_mb, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pipebench")
    ap.add_argument("fixtures")
    ap.add_argument("work")
    ap.add_argument("--seeds", type=int, default=200)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    clean = bytearray(open(os.path.join(a.fixtures, "comm.h5"), "rb").read())
    # The /comm group's objects: between the first and the last byte that names or holds them. Flips
    # elsewhere test the run reader, which the run fuzzing covers (docs/fuzzing.md).
    lo = clean.find(b"comm")
    hi = max(clean.rfind(b"bandwidth_MBps"), clean.rfind(b"max_rel_error")) + 64
    if lo < 0 or hi <= lo:
        print("FAIL: comm.h5 holds no /comm group")
        return 1
    failures, outcomes, worst_s, rss_mb = [], {}, 0.0, 0.0
    for seed in range(a.seeds):
        rng = random.Random(seed)
        data = bytearray(clean)
        flip(data, rng, lo, min(hi, len(data)), 1 + seed % 8)
        f = os.path.join(a.work, "flipped.h5")
        open(f, "wb").write(data)
        for name, cmd in commands(a.pipebench, f, a.fixtures, a.work).items():
            if os.path.exists(os.path.join(a.work, "merged.h5")):
                os.remove(os.path.join(a.work, "merged.h5"))
            rc, took, rss, err = run_one(cmd)
            worst_s, rss_mb = max(worst_s, took), max(rss_mb, rss)
            text = err.decode("utf-8", "replace").strip()
            outcomes[(name, rc)] = outcomes.get((name, rc), 0) + 1
            lines = text.splitlines()
            # warnings (a damaged group left out) may come first; a refusal is the one last line
            ok = all(l.startswith("pipebench: warning: ") for l in lines[:-1]) and (
                rc == 0 and (not lines or lines[-1].startswith("pipebench: warning: "))
                or rc == 2 and lines and lines[-1].startswith("pipebench: error: "))
            if not ok:
                failures.append(f"seed {seed}, {name}: exit {rc} after {took:.1f} s: {text[:300]!r}")
            if rss > MAX_RSS_MB:
                failures.append(f"seed {seed}, {name}: {rss:.0f} MB of memory (bound {MAX_RSS_MB})")
                break  # RUSAGE_CHILDREN keeps its maximum: later commands cannot be judged
    summary = ", ".join(f"{n} exit {rc}: {c}" for (n, rc), c in sorted(outcomes.items(), key=str))
    if failures:
        print(f"FAIL: {len(failures)} of {a.seeds * 4} invocations")
        print("\n".join(failures[:40]))
        print(summary)
        return 1
    print(f"ok: {a.seeds} flipped files x 4 commands, exit 0 or 2 with one line, slowest {worst_s:.1f} s, "
          f"largest process {rss_mb:.0f} MB; {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
