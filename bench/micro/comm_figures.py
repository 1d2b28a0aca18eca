#!/usr/bin/env python3
"""The concurrency figures of docs/comm-bench.md: what running every group at once costs on this machine.

On 4 ranks, alternating, --repeats times (default 5): all_reduce over the tp groups of 2x2x1 with every
group at once and with --one-group, pp-pairs over 1x4x1 (both pipeline neighbours at once), and the
one-direction sendrecv ring over the same pipeline for contrast. Prints the out-of-place time per size
(median and worst over the repeats). Extra arguments go to every `pipebench comm` (e.g. --poll-us 20 on
an oversubscribed node). Usage: comm_figures.py PIPEBENCH [--repeats R] [ARGS...]
"""
import json
import statistics
import subprocess
import sys
import tempfile
import os


def main():
    exe, rest = sys.argv[1], sys.argv[2:]
    repeats = 5
    if rest[:1] == ["--repeats"]:
        repeats, rest = int(rest[1]), rest[2:]
    cases = {
        "all_reduce, tp groups of 2x2x1, all at once": ["all_reduce", "--mapping", "2x2x1", "--group", "tp"],
        "all_reduce, tp groups of 2x2x1, --one-group": ["all_reduce", "--mapping", "2x2x1", "--group", "tp", "--one-group"],
        "sendrecv, pp-pairs of 1x4x1 (both directions)": ["--mapping", "1x4x1", "--group", "pp-pairs"],
        "sendrecv, ring over the pp group of 1x4x1": ["sendrecv", "--mapping", "1x4x1", "--group", "pp"],
    }
    sizes = ["-b", "8", "-e", "512K", "-f", "16", "-n", "20", "-w", "5"]
    res = {k: [] for k in cases}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeats):
            for k, a in cases.items():
                out = os.path.join(d, "f.h5")
                if os.path.exists(out):
                    os.remove(out)
                p = subprocess.run(["mpiexec", "-n", "4", exe, "comm"] + a + sizes + rest + ["--json", "--out", out],
                                   capture_output=True, text=True, timeout=600)
                if p.returncode:
                    sys.exit(p.stderr)
                res[k].append({r["bytes"]: r["time_us"] for r in json.loads(p.stdout) if not r["in_place"]})
    for k, reps in res.items():
        print(k)
        for b in sorted(reps[0]):
            v = [r[b] for r in reps]
            print(f"  {b:>8} B  median {statistics.median(v):10.2f} us  worst {max(v):10.2f} us")


if __name__ == "__main__":
    main()
