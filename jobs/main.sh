#!/usr/bin/env bash
# The README's first command: install what is missing, build, then run the default sweep on 4 local MPI
# ranks (synthetic stages: every major schedule at m = 8 and 16), print its table, write the HDF5
# results, a measured timeline picture, a Chrome trace and the report.
# Environment: RANKS (default 4), PIPEBENCH_OUT (default results/), extra arguments go to `pipebench run`.
set -euo pipefail
cd "$(dirname "$0")/.."
./jobs/setup.sh release
exe=build/release/bench/pipebench
out=${PIPEBENCH_OUT:-results}
ranks=${RANKS:-4}
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$exe" info
echo
mpiexec -n "$ranks" "$exe" run --out "$out/main-$stamp.h5" --svg "$out/main-$stamp-timeline.svg" \
  --trace "$out/main-$stamp-trace.json" --trace-config 3 "$@"
echo
"$exe" report "$out/main-$stamp.h5" --run 3 | sed -n '1,4p'
echo "# results: $out/main-$stamp.h5 (pipebench report $out/main-$stamp.h5), timeline: $out/main-$stamp-timeline.svg,"
echo "# trace: $out/main-$stamp-trace.json (open in https://ui.perfetto.dev)"
