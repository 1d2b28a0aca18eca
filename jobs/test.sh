#!/usr/bin/env bash
# The README's second command: install, build from scratch if needed, run every test (unit, mpi, perf).
# Extra arguments go to ctest, e.g. jobs/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
./jobs/setup.sh release
ctest --preset release -j "$(nproc)" "$@"
