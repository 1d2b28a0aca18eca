#!/usr/bin/env bash
# The README's first command: install, build, then run the default sweep and write its report.
set -euo pipefail
cd "$(dirname "$0")/.."
./jobs/setup.sh release
exe=build/release/bench/pipebench
out=${PIPEBENCH_OUT:-results}
mkdir -p "$out"
"$exe" info
echo
"$exe" simulate --schedule gpipe,1f1b,interleaved,zb-h1,zb-h2,zbv,dualpipev -p 4 -m 8,16 --tf 1 --tb 2 --tw 1
