#!/bin/bash
# Issue 26's target for `compare` (docs/report.md "Significance"): two identical transformer sweeps
# back to back with --repeats 5 show 0 significant differences, and the same sweep with both ranks
# under `taskset -c 0` (half the cores of a 2-core machine) is significantly slower in every
# configuration. Runs PAIRS rounds of A, B (identical) and C (taskset), compares A with B and A with C
# (C is not like for like, its CPU affinity differs: --allow-different), and prints per pair the
# counts and the load, then the totals.
# Usage: jobs/significance.sh [PAIRS=2] [WORKDIR=results/significance] [extra `compare` flags, e.g. --threshold 0]
# RUN_FLAGS adds `run` flags to every sweep (RUN_FLAGS="--repeat-order consecutive" for the order
# before issue 26's fix). Every sweep runs OMP_NUM_THREADS threads per rank (1 unless set), so on a
# Kokkos OpenMP build too the taskset sweep differs from the others in its cores only (OpenMP's default
# is one thread per CPU of the mask: two on every CPU, one under taskset); the release build's Kokkos is
# Serial and its BLAS runs --blas-threads 1. Needs build/release/bench/pipebench and mpiexec; 1.5 to 3
# minutes per pair on a 2-core VM.
set -eu
PAIRS=${1:-2}
WORK=${2:-results/significance}
shift $(( $# < 2 ? $# : 2 ))
B=${PIPEBENCH:-$(pwd)/build/release/bench/pipebench}
[ -x "$B" ] || { echo "jobs/significance.sh: $B not built (cmake --build --preset release --target pipebench)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "jobs/significance.sh: taskset (util-linux) is missing" >&2; exit 2; }
mkdir -p "$WORK"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
SWEEP=(run --workload transformer --layers 4 --hidden 128 --heads 4 --seq 64 --schedule 1f1b,zb-h1 -m 4,8
       --steps 5 --repeats 5 ${RUN_FLAGS:-})
load() { cut -d' ' -f1-3 /proc/loadavg; }
# "<significant> of <matched> significant, <slower> significantly slower, ratios r1 r2 ..." from compare --json.
counts() {
  python3 -c '
import json, sys
c = json.load(sys.stdin)
ms = c["matches"]
sig = [m for m in ms if m["step_time"]["significant"]]
slower = [m for m in sig if m["step_time"]["ratio"] > 1]
few = sum(1 for m in ms if m["step_time"]["significant"] is None)
print("%d of %d significant, %d significantly slower, %d not enough samples; step B/A %s" % (len(sig), len(ms),
      len(slower), few, " ".join("%.3f[%.3f-%.3f]" % (m["step_time"]["ratio"], m["step_time"]["ci_low"] or 0,
      m["step_time"]["ci_high"] or 0) for m in ms)))'
}
tot_ab=0 tot_ac=0 tot_slow=0 tot_n=0
for pair in $(seq 1 "$PAIRS"); do
  d="$WORK/pair$pair-$(date -u +%H%M%S)"
  mkdir -p "$d"
  l0=$(load); mpiexec -n 2 "$B" "${SWEEP[@]}" -o "$d/a.h5" >"$d/a.txt" 2>&1
  l1=$(load); mpiexec -n 2 "$B" "${SWEEP[@]}" -o "$d/b.h5" >"$d/b.txt" 2>&1
  l2=$(load); mpiexec -n 2 taskset -c 0 "$B" "${SWEEP[@]}" -o "$d/c.h5" >"$d/c.txt" 2>&1
  l3=$(load)
  ab=$("$B" compare "$d/a.h5" "$d/b.h5" --json "$@" | counts)
  ac=$("$B" compare "$d/a.h5" "$d/c.h5" --json --allow-different "$@" | counts)
  echo "pair $pair: load before a/b/c/after: $l0 / $l1 / $l2 / $l3"
  echo "  a vs b (identical): $ab"
  echo "  a vs c (taskset -c 0): $ac"
  tot_ab=$((tot_ab + ${ab%% of*}))
  tot_ac=$((tot_ac + ${ac%% of*}))
  n=${ab#* of }; n=${n%% *}; tot_n=$((tot_n + n))
  s=${ac#*significant, }; s=${s%% *}; tot_slow=$((tot_slow + s))
done
echo "total over $PAIRS pair(s): identical $tot_ab of $tot_n significant (target 0); taskset $tot_slow of $tot_n significantly slower (target $tot_n)"
