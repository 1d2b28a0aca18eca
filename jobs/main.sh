#!/usr/bin/env bash
# The README's first command: install what is missing, build, then run the default sweep on 4 local MPI
# ranks (synthetic stages: every major schedule at m = 8 and 16), print its table, write the HDF5
# results, a measured timeline picture and a Chrome trace of the first configuration, and the report
# (the first lines in the terminal, the whole as one HTML page: docs/report.md).
# Environment: RANKS (default 4), PIPEBENCH_OUT (default results/); extra arguments go to `pipebench run`
# (e.g. --trace-config 3 to picture another configuration: the last value of a flag wins).
# For the tests (tests/docs/main_sh.sh): PIPEBENCH_EXE (a built pipebench) skips jobs/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${PIPEBENCH_EXE:-} ]]; then
  ./jobs/setup.sh release
fi
exe=${PIPEBENCH_EXE:-build/release/bench/pipebench}
out=${PIPEBENCH_OUT:-results}
ranks=${RANKS:-4}
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
"$exe" info
echo
# No --trace-config: the default, configuration 1, exists in every sweep (a fixed 3 failed sweeps of
# fewer configurations).
mpiexec -n "$ranks" "$exe" run --out "$out/main-$stamp.h5" --svg "$out/main-$stamp-timeline.svg" \
  --trace "$out/main-$stamp-trace.json" "$@"
echo
"$exe" report "$out/main-$stamp.h5" --run 1 | sed -n '1,4p'
"$exe" report "$out/main-$stamp.h5" --html "$out/main-$stamp.html"
echo "# results: $out/main-$stamp.h5 (pipebench report $out/main-$stamp.h5), report: $out/main-$stamp.html,"
echo "# timeline: $out/main-$stamp-timeline.svg,"
echo "# trace: $out/main-$stamp-trace.json (open in https://ui.perfetto.dev)"
