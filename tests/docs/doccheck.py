#!/usr/bin/env python3
"""Runs the examples of one documentation page and compares what they print with what the page shows.

An example is a ```console (or ```sh) block with `$ ` command lines, preceded by a marker comment:

    <!-- example: output=exact|shape|none [words=any] [rc=N[,N...]] [stream=both|stdout|stderr] [fixture=report] -->

The lines after a command, up to the next command, are its shown output:
  exact  every line equal (trailing spaces ignored); a line `...` stands for any number of lines, and
         `...` inside a line for any text;
  shape  the same, but any number (also inside a word, and a lone `-`, a missing value) matches any
         number: timings differ; with words=any, a word on a line not starting with `#` matches any
         word (hosts, CPU and library names), so such a line only needs the same columns;
  none   only the exit code is checked.
rc: the expected exit code of each command (one value: all). stream: what is compared (default both:
stdout, then stderr). fixture=report writes the results files of tests/cli/report_fixtures.cpp first.
A ```console/```sh block with `$ ` lines and no marker is an error, so no example goes unchecked; a
marker `<!-- example: skip REASON -->` states why a block is not run. Blocks run in page order in one
scratch directory, with `pipebench` (and build/release/bench/pipebench) the binary under test and
tests/data the repository's.
Usage: doccheck.py --exe PIPEBENCH --source REPO --work DIR [--report-fixtures EXE] PAGE.md
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$|^-$")


def parse_page(path):
    """Yields (line number, options, commands) per example block; commands are (command, shown lines)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    marker, i = None, 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            marker = (i + 1, m.group(1))
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            if lines[i].strip():
                marker = None
            i += 1
            continue
        lang, start = f.group(1), i + 1
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body, i = lines[start:j], j + 1
        has_cmd = any(b.startswith("$ ") for b in body)
        if lang not in ("console", "sh") or not has_cmd:
            marker = None
            continue
        if marker is None:
            raise SystemExit(f"{path}:{start}: a ```{lang} block with $ commands needs an <!-- example: ... --> marker")
        opts = parse_options(marker[1], path, marker[0])
        marker = None
        if "skip" in opts:
            continue
        yield start, opts, split_commands(body)


def parse_options(text, path, line):
    if text.startswith("skip"):
        return {"skip": text[4:].strip()}
    opts = {"output": None, "words": "exact", "rc": "0", "stream": "both", "fixture": None}
    for word in shlex.split(text):
        key, _, value = word.partition("=")
        if key not in opts or not value:
            raise SystemExit(f"{path}:{line}: unknown marker option '{word}'")
        opts[key] = value
    if opts["output"] not in ("exact", "shape", "none"):
        raise SystemExit(f"{path}:{line}: marker needs output=exact|shape|none")
    return opts


def split_commands(body):
    cmds, k = [], 0
    while k < len(body):
        if not body[k].startswith("$ "):
            k += 1
            continue
        cmd = body[k][2:]
        while cmd.endswith("\\") and k + 1 < len(body):
            k += 1
            cmd = cmd[:-1] + " " + body[k].strip()
        shown = []
        k += 1
        while k < len(body) and not body[k].startswith("$ "):
            shown.append(body[k])
            k += 1
        while shown and not shown[-1].strip():
            shown.pop()
        cmds.append((cmd, shown))
    return cmds


# A number inside an escaped word (`0.5,`, `1x4x1`), with its exponent: a JSON value before its comma
# prints as 7.6e-05 on one run and 0.00054 on the next.
INNER = re.compile(r"\d+(?:\\\.\d+)?(?:[eE](?:\\[-+])?\d+)?")
INNER_ANY = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-)"


def line_pattern(expected, shape, any_word=False):
    """A regex for one shown line. `...` matches any text. In shape mode a number (or a lone `-`)
    matches any number, and with any_word a word on a line not starting with `#` any word."""
    expected = expected.strip() if shape else expected.rstrip()
    if not shape:
        return ".*".join(re.escape(p) for p in expected.split("..."))
    context = expected.startswith("#")
    out = []
    for tok in expected.split():
        if tok == "...":
            out.append(".*")
        elif NUMBER.match(tok):
            out.append(NUM)
        elif any_word and not context and "..." not in tok:
            out.append(r"\S+")
        else:  # a word: literal, but numbers inside it (`0:11.47/23.03`, `1x4x1`) match any
            out.append(".*".join(INNER.sub(lambda m: "\0", re.escape(p)).replace("\0", INNER_ANY)
                                 for p in tok.split("...")))
    return r"\s*".join(out) if "..." in expected else r"\s+".join(out)


def same_line(expected, actual, shape, any_word=False):
    actual = actual.strip() if shape else actual.rstrip()
    return re.fullmatch(line_pattern(expected, shape, any_word), actual) is not None


def match(shown, actual, shape, any_word=False):
    """True when the actual lines fit the shown ones (`...` lines: any number of lines)."""
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(shown):
            r = j == len(actual)
        elif shown[i].strip() == "...":
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and same_line(shown[i], actual[j], shape, any_word) and go(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    sys.setrecursionlimit(100000)
    return go(0, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--report-fixtures")
    ap.add_argument("page")
    args = ap.parse_args()

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    bindir = os.path.join(work, ".bin")
    os.makedirs(os.path.join(work, "build/release/bench"))
    os.makedirs(bindir)
    exe = os.path.abspath(args.exe)
    os.symlink(exe, os.path.join(bindir, "pipebench"))
    os.symlink(exe, os.path.join(work, "build/release/bench/pipebench"))
    os.makedirs(os.path.join(work, "tests"))
    os.symlink(os.path.join(os.path.abspath(args.source), "tests/data"), os.path.join(work, "tests/data"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")

    page = os.path.join(args.source, args.page)
    failures, count = [], 0
    for line, opts, cmds in parse_page(page):
        if opts["fixture"] == "report":
            subprocess.run([args.report_fixtures, work], check=True, stdout=subprocess.DEVNULL)
        rcs = [int(x) for x in opts["rc"].split(",")]
        if len(rcs) == 1:
            rcs = rcs * len(cmds)
        if len(rcs) != len(cmds):
            failures.append(f"{args.page}:{line}: rc= gives {len(rcs)} codes for {len(cmds)} commands")
            continue
        for (cmd, shown), want_rc in zip(cmds, rcs):
            count += 1
            p = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, capture_output=True,
                               text=True, timeout=240)
            out = {"stdout": p.stdout, "stderr": p.stderr, "both": p.stdout + p.stderr}[opts["stream"]]
            actual = out.rstrip("\n").split("\n") if out.strip() else []
            problem = None
            if p.returncode != want_rc:
                problem = f"exit code {p.returncode}, the page says {want_rc}"
            elif opts["output"] != "none" and not match(shown, actual, opts["output"] == "shape",
                                                         opts["words"] == "any"):
                problem = f"output differs from the page ({opts['output']})"
            status = "ok" if problem is None else "FAIL"
            print(f"{status}  {args.page}:{line}  {opts['output']:5}  $ {cmd}")
            if problem:
                failures.append(f"{args.page}:{line}: $ {cmd}\n  {problem}\n--- shown:\n" + "\n".join(shown) +
                                "\n--- printed (stdout, then stderr):\n" + p.stdout + p.stderr)
    for f in failures:
        print(f, file=sys.stderr)
    print(f"# {args.page}: {count} example command(s), {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
