#!/usr/bin/env python3
"""A hostile user's probe of pipebench's command line (docs/fuzzing.md).

Runs COUNT random invocations of every subcommand with 1-3 flags set to hostile values (empty, huge,
octal, hex, NaN, control bytes, non-UTF-8, directories, /dev/zero, ...), each under a 4 GiB address
space limit and a 20 s timeout, and classes every outcome: ok, usage (exit 2 with one clean line),
and the findings: exit 2 with a multi-line or raw-byte message, another exit code, a signal, a hang.
Prints the counts as JSON and writes the findings, with their command lines, to OUTDIR.

Usage: cli_probe.py PIPEBENCH COUNT SEED OUTDIR
"""
import collections
import json
import os
import random
import resource
import subprocess
import sys
import tempfile

HOSTILE = ["", " ", "-1", "0", "1", "2", "3", "010", "0x10", "1e308", "-1e308", "nan", "inf", "1e-300",
           "4294967297", "2147483647", "2147483648", "99999999999999999999", "1,1", "1,,2", ",", "a", "abc",
           "\n", "x\ny", "\x01", "\udcff\udcfe", "1e-9ns", "1e9s", "100GiB", "1K", "3s", "0ms", "1.5", "-0",
           "+1", "1_000", "  4  ", "é", "x" * 300, "2x2x1", "0x0x0", "4294967297x1x1", "1x1", "1x1x1x1",
           "/tmp", "/dev/zero", "/dev/null", "/nonexistent/x", "gpipe", "1f1b,1f1b", "zbv", "interleaved",
           "dualpipev", "zb-h1", "zb-h2", "dualpipe", "looped-bfs", "grid", "json", "csv", "svg", "tp-dp-pp",
           "tp-cp-ep-dp-pp", "tp-cp-pp-ep-dp",
           "pp-tp", "mpi", "nccl", "sleep", "spin", "none", "full", "fp64", "fp16"]
FLAGS = {
    "schedule": ["--schedule", "-p", "-m", "-v", "--group", "--format", "--import-csv", "--tf", "--tb", "--tw",
                 "--t-overlap", "--p2p-time", "--stage-cost", "-o", "--force"],
    "simulate": ["--schedule", "-p", "-m", "-v", "--group", "--tf", "--tb", "--tw", "--t-overlap", "--p2p-time",
                 "--stage-cost", "--json", "--timeline", "--svg"],
    "topology": ["-t", "-p", "-d", "-v", "--order", "--mapping", "--context-parallel", "--expert-parallel",
                 "--ranks-per-node", "--hostfile", "--rank", "--json"],
    "run": ["--schedule", "-m", "--mapping", "-v", "--group", "--order", "--context-parallel", "--expert-parallel",
            "--backend", "--workload", "--tf", "--tb", "--tw", "--stage-cost", "--synthetic-mode", "--activation-bytes", "--p2p-bytes", "--steps", "--warmup",
            "--timeout", "--poll-us", "-o", "--append", "--resume", "--json", "--trace", "--svg", "--trace-config",
            "--layers", "--hidden", "--heads", "--seq", "--vocab", "--recompute", "--precision", "--blas-threads"],
    "report": ["--run", "--json", "--trace"],
    "info": ["--json"],
}
SWITCHES = {"--json", "--timeline", "--append", "--resume", "--force"}
QUICK = ["--tf", "100us", "--tb", "200us", "--tw", "100us", "--steps", "1", "--warmup", "0"]
BASE = {"schedule": ["--schedule", "1f1b", "-p", "2", "-m", "4"],
        "simulate": ["--schedule", "1f1b", "-p", "2", "-m", "4"],
        "topology": ["-p", "2"],
        "run": ["--schedule", "1f1b", "-m", "2", "--timeout", "5s"] + QUICK,
        "report": ["{results}"], "info": []}


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def outcome(rc, err):
    if rc is None:
        return "hang"
    if rc < 0:
        return "signal %d" % -rc
    if rc == 0:
        return "ok"
    if rc != 2:
        return "exit %d" % rc
    lines = [l for l in err.decode("utf-8", "replace").splitlines() if l.strip()]
    if len(lines) != 1:
        return "usage (2) but multi-line"
    if any(c < 0x20 and c not in (9, 10) for c in err) or any(c >= 0x80 for c in err):
        return "usage (2) but raw bytes"
    return "usage (2)"


def main():
    exe, count, seed, outdir = os.path.abspath(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pipebench-probe-")
    results = os.path.join(work, "r.h5")
    subprocess.run([exe, "run", "--schedule", "1f1b", "-m", "2", "-o", results] + QUICK, capture_output=True, cwd=work)
    counts, findings = collections.Counter(), []
    for i in range(count):
        cmd = rng.choice(sorted(FLAGS))
        args = [a.format(results=results) for a in BASE[cmd]]
        for _ in range(rng.randint(1, 3)):
            flag = rng.choice(FLAGS[cmd])
            args += [flag] if flag in SWITCHES else [flag, rng.choice(HOSTILE)]
        if cmd in ("run", "schedule", "simulate") and rng.random() < 0.3:
            args += ["--svg" if cmd == "simulate" else "-o", os.path.join(work, "out%d" % i)]
        argv = [os.fsencode(a) for a in [exe, cmd] + args]
        try:
            p = subprocess.run(argv, capture_output=True, timeout=20, cwd=work, preexec_fn=limits,
                               start_new_session=True)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = None, b""
        cls = outcome(rc, err)
        counts[cls] += 1
        counts["%s: %s" % (cmd, cls)] += 1
        if cls not in ("ok", "usage (2)"):
            findings.append({"argv": [a.decode("utf-8", "backslashreplace") for a in argv[1:]], "class": cls,
                             "stderr": err.decode("utf-8", "backslashreplace")[-400:]})
    print(json.dumps({"count": count, "seed": seed, "outcomes": dict(sorted(counts.items()))}, indent=1))
    with open(os.path.join(outdir, "findings-%d.json" % seed), "w") as f:
        json.dump(findings, f, indent=1)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
