#!/usr/bin/env bash
# jobs/main.sh's own pipeline (info, run with --svg and --trace, report, report --html) on a short sweep, with the
# built pipebench instead of jobs/setup.sh. Usage: main_sh.sh PIPEBENCH WORKDIR [run flags...]
# Passes when every step exits 0 and the results file, the HTML report, the SVG and the trace are written.
set -euo pipefail
exe=$1 work=$2
shift 2
rm -rf "$work" && mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
PIPEBENCH_EXE=$exe PIPEBENCH_OUT=$work RANKS=2 "$here/../../jobs/main.sh" "$@" | tee "$work/main.log"
for f in "$work"/main-*.h5 "$work"/main-*.html "$work"/main-*-timeline.svg "$work"/main-*-trace.json; do
  [[ -s $f ]] || { echo "main_sh: $f is missing or empty" >&2; exit 1; }
done
grep -q '^# run 1 of ' "$work/main.log" || { echo "main_sh: no report of run 1" >&2; exit 1; }
echo "main_sh: ok"
