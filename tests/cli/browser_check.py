#!/usr/bin/env python3
"""The HTML report and comparison opened in a real browser (headless Chromium, Debian's `chromium`).

Usage: browser_check.py PIPEBENCH MPIEXEC WORKDIR [--keep-png DIR]

Makes two small results files with `mpiexec -n 4 pipebench run` (synthetic stages, tiny times), writes
`report --html` of one and `compare --html` of both, and opens each page once in headless Chromium,
which dumps the DOM after the page's scripts ran and takes a 1280 px wide screenshot. Checks:
  - no console message at all (errors, failed loads, uncaught exceptions: Chromium logs every console
    message as a 'CONSOLE' line on stderr with --enable-logging=stderr --v=0);
  - the count of <svg> elements and the <title> of each, in order;
  - the runs table holds one row per run;
  - the screenshot is a PNG 1280 px wide.
Exits 77 (ctest SKIP_RETURN_CODE) when chromium is not installed; jobs/test.sh installs it.
"""
import os
import re
import shutil
import struct
import subprocess
import sys


def fail(msg):
    print("browser_check: FAIL: " + msg)
    sys.exit(1)


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if p.returncode != 0:
        fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout[-3000:]))
    return p.stdout


def browse(chromium, page, png, work):
    """Returns (DOM text, console lines). One Chromium process per page, its own profile."""
    profile = os.path.join(work, "profile-" + os.path.basename(page))
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
           "--hide-scrollbars", "--window-size=1280,2400", "--screenshot=" + png, "--dump-dom",
           "file://" + os.path.abspath(page)]
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:")
    p = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    if p.returncode != 0:
        fail("chromium exited %d on %s:\n%s" % (p.returncode, page, p.stderr[-3000:]))
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.stdout, console


def svg_titles(dom):
    """The <title> that opens each <svg> element, in document order."""
    out = []
    for m in re.finditer(r"<svg\b[^>]*>\s*(<title>(.*?)</title>)?", dom, re.S):
        out.append(m.group(2) if m.group(1) else None)
    return out


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    return struct.unpack(">II", head[16:24])


def check_page(chromium, page, work, want_titles, keep):
    png = page[:-5] + ".png"
    dom, console = browse(chromium, page, png, work)
    if console:
        fail("console messages on %s:\n%s" % (page, "\n".join(console)))
    titles = svg_titles(dom)
    if titles != want_titles:
        fail("%s: svg titles\n  %s\nexpected\n  %s" % (page, titles, want_titles))
    w, h = png_size(png)
    if w != 1280:
        fail("%s: screenshot is %d px wide, expected 1280" % (png, w))
    if keep:
        shutil.copy(png, os.path.join(keep, os.path.basename(png)))
    print("browser_check: %s: %d svg, no console messages, screenshot %dx%d" % (os.path.basename(page), len(titles), w, h))
    return dom


def main():
    args = sys.argv[1:]
    keep = None
    if "--keep-png" in args:
        i = args.index("--keep-png")
        keep = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        print(__doc__)
        return 2
    exe, mpiexec, work = args
    chromium = shutil.which("chromium")
    if not chromium:
        print("browser_check: chromium is not installed (apt-get install chromium): skipped")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    quick = ["--schedule", "1f1b,zbv", "-m", "4,8", "--tf", "200us", "--tb", "400us", "--tw", "200us",
             "--warmup", "0", "--steps", "5"]
    for name in ("a.h5", "b.h5"):
        run([mpiexec, "-n", "4", exe, "run"] + quick + ["-o", name], work)
    run([exe, "report", "a.h5", "--html", "report.html"], work)
    run([exe, "compare", "a.h5", "b.h5", "--html", "compare.html"], work)

    runs = ["run %d %s t=1 p=4 d=1 v=%d m=%d" % (i + 1, s, v, m)
            for i, (s, v, m) in enumerate([("1f1b", 1, 4), ("1f1b", 1, 8), ("zbv", 2, 4), ("zbv", 2, 8)])]
    # The bubble against m: one small-multiples figure (issue 26), its panels groups with their own titles.
    want = ["Bubble against m, one panel per schedule", "Step time breakdown per run",
            "Timeline measured: " + runs[0], "Timeline simulated: " + runs[0],
            "Timeline measured: " + runs[2], "Timeline simulated: " + runs[2],
            "Peak activation memory per pipeline rank"]
    dom = check_page(chromium, os.path.join(work, "report.html"), work, want, keep)
    table = re.search(r'<table class="sortable" id="runs-table">(.*?)</table>', dom, re.S)
    if not table or table.group(1).count("<tr") != 1 + 4:
        fail("report.html: the runs table does not hold a header and 4 rows")
    # The headline opens the page, before the summary.
    head, summary = dom.find('id="headline"'), dom.find('id="summary"')
    if head < 0 or summary < 0 or head > summary or "fastest configuration (step time)" not in dom:
        fail("report.html: the headline does not open the page")
    if dom.count("<title>Bubble against m: ") != 2:
        fail("report.html: the small-multiples figure does not hold one panel per schedule")
    want = ["Geometric-mean step time B/A per schedule", "Step time, B against A (one point per configuration)"]
    dom = check_page(chromium, os.path.join(work, "compare.html"), work, want, keep)
    table = re.search(r'<table class="sortable" id="matches-table">(.*?)</table>', dom, re.S)
    if not table or table.group(1).count("<tr") != 1 + 4:
        fail("compare.html: the matches table does not hold a header and 4 rows")
    # The verdict per configuration and the like-for-like section open the comparison.
    verdict, like, summary = dom.find('id="verdict"'), dom.find('id="like"'), dom.find('id="summary"')
    if not (0 <= verdict < like < summary) or "95 % interval" not in dom:
        fail("compare.html: the verdict and like-for-like sections do not open the page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
