#!/bin/bash
# The OpenMP scaling figure of docs/gpu.md: one transformer block's F+I+W rate against the sgemm
# baseline (the block's largest product, [s*b, h] x [h, 4h]) with 1 and 2 threads, from
# bench_kernels' paired benchmark (each repetition times the baseline, then the block, under the same
# load). Prints per thread count the median and the worst of the repetitions; "blas own" is the same
# product through the BLAS's own threads (sgemm_blas_threads), for comparison with the split products.
#
# Usage: bench/micro/omp_scaling.sh [BENCH_KERNELS] [--size=small|paper] [--repetitions=N] [--threads="1 2"]
# Default: build/kokkos4-openmp/bench/micro/bench_kernels, --size=paper, 5 repetitions, 1 and 2 threads.
# Threads are bound one per core (OMP_PROC_BIND=spread, OMP_PLACES=cores).
set -euo pipefail
exe=build/kokkos4-openmp/bench/micro/bench_kernels
size=paper reps=5 threads="1 2"
for arg in "$@"; do
  case $arg in
    --size=*) size=${arg#*=} ;;
    --repetitions=*) reps=${arg#*=} ;;
    --threads=*) threads=${arg#*=} ;;
    -*) echo "omp_scaling.sh: error: unknown option $arg" >&2; exit 2 ;;
    *) exe=$arg ;;
  esac
done
[[ -x $exe ]] || { echo "omp_scaling.sh: error: $exe is not an executable (build it: cmake --build --preset kokkos4-openmp --target bench_kernels)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in $threads; do
  OMP_NUM_THREADS=$t OMP_PROC_BIND=spread OMP_PLACES=cores "$exe" --size="$size" \
    --benchmark_filter='^sgemm_blas_threads/|^block/FIW_vs_sgemm/' --benchmark_min_time=0.5 \
    --benchmark_repetitions="$reps" --benchmark_out="$tmp/$t.json" --benchmark_out_format=json >"$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; exit 1; }
done
python3 - "$tmp" $threads <<'PY'
import json, statistics, sys
d, threads = sys.argv[1], sys.argv[2:]
print(f"{'threads':>7}  {'block GFLOP/s':>15}  {'sgemm GFLOP/s':>15}  {'ratio':>13}  {'blas own':>8}   (median / worst)")
for t in threads:
    j = json.load(open(f"{d}/{t}.json"))
    runs = [b for b in j["benchmarks"] if b.get("run_type") == "iteration"]
    paired = [b for b in runs if b["name"].startswith("block/FIW_vs_sgemm/")]
    own = [b["FLOP/s"] / 1e9 for b in runs if b["name"].startswith("sgemm_blas_threads")]
    cell = lambda v: f"{statistics.median(v):6.1f} / {min(v):6.1f}"
    ratio = [b["ratio"] for b in paired]
    print(f"{t:>7}  {cell([b['block_GFLOP/s'] for b in paired]):>15}  {cell([b['sgemm_GFLOP/s'] for b in paired]):>15}  "
          f"{statistics.median(ratio):5.3f} / {min(ratio):5.3f}  {statistics.median(own) if own else float('nan'):8.1f}")
print(f"# {j['context'].get('blas', '')}; {j['context'].get('kokkos', '')}; size {j['context'].get('size', '')}")
PY
