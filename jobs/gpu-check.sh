#!/usr/bin/env bash
# The device check of issues 14 and 25, under 8 minutes on one GPU. Usage:
#   jobs/gpu-check.sh               build (or reuse) the kokkos4-cuda configuration here and run the check
#   jobs/gpu-check.sh --bundle DIR  build it, then pack the binaries, the non-system shared libraries they
#                                   need (ldd) and MPICH's launcher into DIR, with a copy of this script,
#                                   for a GPU machine that lacks pipebench's dependencies
#   DIR/gpu-check.sh                run the check from such a bundle
# The CUDA libraries (cudart, cuBLAS, NCCL) are the GPU machine's own: found under CUDA_HOME,
# /usr/local/cuda* or a Python environment's nvidia/*/lib, and put on LD_LIBRARY_PATH.
# Steps: smoke (nvidia-smi, pipebench info), the gpu-labelled kernel tests (device against host results,
# gradients), a 1-rank transformer run, a 4-rank synthetic run sharing the GPU through the MPI backend,
# NCCL point-to-point and all-reduce on one rank, 1-rank synthetic and transformer runs with --backend
# nccl (with 2 or more GPUs: 2 or 4 ranks over NCCL, pipeline links, t x p x d mappings with tied
# embeddings, DualPipe's two copies), and the refusals of bad input (no visible device, more ranks than
# GPUs for NCCL, a tensor-parallel transformer over MPI), and issue 25's figures (bench_kernels --size=gpu:
# block F+I+W / cuBLAS sgemm and / cuBLAS bf16 GEMM, fused / unfused attention; the runs' MFU and bubbles). Then a summary and
# that one table; exit 1 if a step failed, 0 if
# all passed or there is no GPU (said so; where the toolkit has a driver stub, the no-device refusal is
# checked).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "# gpu-check: $*"; }

if [[ -f $here/payload.tar.gz ]]; then  # inside a bundle
  root=${TMPDIR:-/tmp}/pipebench-gpu-bundle
  rm -rf "$root" && mkdir -p "$root" && tar xzf "$here/payload.tar.gz" -C "$root"
  bin=$root/bin
  export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The bundle's C++ runtime only where the machine's lacks the version it was built against.
  want=$(cat "$root/glibcxx-needed" 2>/dev/null)
  sys=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
  if [[ -n $want ]] && ! grep -aq "$want" "${sys:-/nonexistent}" 2>/dev/null; then
    say "the machine's libstdc++ (${sys:-none}) lacks $want: using the bundle's"
    export LD_LIBRARY_PATH=$root/lib-fallback:$LD_LIBRARY_PATH
  fi
  export PATH=$root/bin:$PATH
  mpiexec=(mpiexec.hydra -launcher fork)
else
  cd "$here/.." || exit 1
  rc=0
  kokkos=$(./jobs/kokkos.sh cuda) || rc=$?
  if ((rc == 3)); then
    say "kokkos4-cuda not built: no Kokkos release tarballs (docs/gpu.md)"
    exit 0
  fi
  ((rc == 0)) || exit 1
  t0=$SECONDS
  # bench_kernels for the figures' table: Google Benchmark is a host library, linked as is.
  cmake --preset kokkos4-cuda -DKokkos_ROOT="$kokkos" -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
    -DPIPEBENCH_ENABLE_BENCHMARKS=ON >/dev/null || exit 1
  cmake --build --preset kokkos4-cuda -j "${PIPEBENCH_JOBS:-$(nproc)}" \
    --target pipebench test_kernels mpitest_comm_nccl bench_kernels || exit 1
  say "build kokkos4-cuda: $((SECONDS - t0)) s"
  b=$PWD/build/kokkos4-cuda
  if [[ ${1:-} == --bundle ]]; then
    out=${2:?--bundle needs a directory}
    stage=$(mktemp -d)
    mkdir -p "$stage/bin" "$stage/lib" "$out"
    cp "$b/bench/pipebench" "$b/tests/test_kernels" "$b/tests/mpitest_comm_nccl" "$b/bench/micro/bench_kernels" "$stage/bin/"
    hydra=$(readlink -f "$(command -v mpiexec.hydra)")
    cp "$hydra" "$(dirname "$hydra")/hydra_pmi_proxy" "$stage/bin/"
    # Every library ldd resolves, except the C library family and what the GPU machine brings (driver, CUDA).
    skip='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvidia)\.'
    for f in "$stage"/bin/*; do ldd "$f"; done | awk '$3 ~ /^\// {print $1, $3}' | sort -u |
      while read -r name path; do
        if [[ $name =~ ^(libstdc\+\+|libgcc_s)\. ]]; then  # used only where the machine's are older
          mkdir -p "$stage/lib-fallback" && cp -L "$path" "$stage/lib-fallback/$name"
        elif ! [[ $name =~ $skip ]]; then
          cp -L "$path" "$stage/lib/$name"
        fi
      done
    # The CUDA runtime (small) as a fallback for a machine whose toolkit is not CUDA 13; cuBLAS and
    # NCCL are too large to carry and must be the machine's.
    mkdir -p "$stage/lib-cuda" && cp -L "$(ldd "$stage/bin/pipebench" | awk '$1 == "libcudart.so.13" {print $3}')" "$stage/lib-cuda/"
    # UCX (MPICH's transport) loads its shared-memory transports from <libdir>/ucx.
    [[ -d /usr/lib/x86_64-linux-gnu/ucx ]] && mkdir -p "$stage/lib/ucx" &&
      cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0 "$stage/lib/ucx/" 2>/dev/null
    objdump -T "$stage"/bin/* "$stage"/lib/*.so* 2>/dev/null | grep -o 'GLIBCXX_3\.4\.[0-9]*' | sort -V | tail -n 1 \
      >"$stage/glibcxx-needed"
    tar czf "$out/payload.tar.gz" -C "$stage" .
    cp "$here/gpu-check.sh" "$out/gpu-check.sh"
    rm -rf "$stage"
    say "bundle $out: $(du -sh "$out" | cut -f1) ($(tar tzf "$out/payload.tar.gz" | grep -c '^\./lib/') libraries)"
    exit 0
  fi
  bin=$PWD/build/kokkos4-cuda/bin
  mkdir -p "$bin"
  ln -sf "$b/bench/pipebench" "$b/tests/test_kernels" "$b/tests/mpitest_comm_nccl" "$b/bench/micro/bench_kernels" "$bin/"
  mpiexec=(mpiexec)
fi

# The GPU machine's CUDA libraries.
cuda_dirs=()
for d in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         /usr/local/cuda-*/lib64 /usr/lib/x86_64-linux-gnu \
         $(python3 -c 'import site; print(*site.getsitepackages())' 2>/dev/null | xargs -I{} sh -c 'ls -d {}/nvidia/*/lib 2>/dev/null'); do
  [[ -d $d ]] && cuda_dirs+=("$d")
done
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=
  for d in "${cuda_dirs[@]}"; do
    if [[ -e $d/$lib ]]; then found=$d; break; fi
  done
  if [[ -n $found ]]; then
    say "$lib: $found"
    [[ :${LD_LIBRARY_PATH:-}: == *:$found:* ]] || export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$found
  elif [[ -n ${root:-} && -e $root/lib-cuda/$lib ]]; then
    say "$lib: not on this machine, using the bundle's"
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/lib-cuda
  else
    say "$lib: not found (searched ${cuda_dirs[*]})"
  fi
done
missing=$(ldd "$bin/pipebench" | grep 'not found')
[[ -n $missing ]] && say "unresolved libraries: $missing"

export OMP_PROC_BIND=false OMP_NUM_THREADS=2
work=$(mktemp -d)
results=()
step() {  # step NAME LIMIT COMMAND...: run with a time limit, keep the tail, record PASS/FAIL
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  say "== $name: $*"
  timeout "$limit" "$@" >"$work/$name.log" 2>&1
  rc=$?
  tail -n 25 "$work/$name.log"
  local verdict=FAIL
  [[ $rc == 0 ]] && verdict=PASS
  [[ $rc == 0 ]] && grep -q '\[  SKIPPED \]' "$work/$name.log" && verdict=SKIP
  results+=("$(printf '%-12s %s (rc %d, %d s)' "$name" "$verdict" "$rc" $((SECONDS - t0)))")
}
summary() {
  echo "# gpu-check summary"
  printf '  %s\n' "${results[@]}"
}
# Issue 25's one table, from the logs of the steps above (docs/gpu.md, "The device check").
median_of() {  # median_of NAME-PART LOG: the median of the paired ratio line of that benchmark
  grep -F "($1" "$2" 2>/dev/null | grep -o 'median [0-9.e+-]*' | head -n 1 | cut -d' ' -f2
}
first_row() {  # first_row LOG: bubble and simulated (%) of the first run row of a `pipebench run` table
  grep -v '^#' "$1" 2>/dev/null | awk 'NF >= 10 && $1 ~ /^[0-9]+$/ {print $9 " / " $10 " %"; exit}'
}
figures() {
  local k=$work/kernels-fig.log
  echo "# gpu-check figures: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), $(date -u +%F)"
  printf '| %-62s | %-22s | %s |\n' figure value target
  printf '| %-62s | %-22s | %s |\n' "block F+I+W / cuBLAS sgemm, fp32, h=4096 a=32 s=2048 b=1" \
    "$(median_of 'block/FIW_vs_sgemm/none, wall' "$k")" ">= 0.80"
  printf '| %-62s | %-22s | %s |\n' "the same with --attention fused" "$(median_of 'block/FIW_vs_sgemm/fused, wall' "$k")" ""
  printf '| %-62s | %-22s | %s |\n' "block F+I+W / cuBLAS bf16 GEMM, products in bf16 (autocast)" \
    "$(median_of 'block/FIW_vs_gemm16/bf16/none, wall' "$k")" ">= 0.60"
  printf '| %-62s | %-22s | %s |\n' "the same with --attention fused (attention in fp32)" \
    "$(median_of 'block/FIW_vs_gemm16/bf16/fused, wall' "$k")" ""
  printf '| %-62s | %-22s | %s |\n' "unfused / fused attention F+I time, s=2048" \
    "$(median_of 'attention/fused_vs_unfused/s:2048, wall' "$k")" "> 1: fused faster"
  printf '| %-62s | %-22s | %s |\n' "1-rank transformer MFU (h=1024, s=512, 4 layers)" \
    "$(grep -o 'MFU [0-9.]* %' "$work/transformer.log" 2>/dev/null | head -n 1)" ""
  printf '| %-62s | %-22s | %s |\n' "4-rank synthetic 1f1b on one GPU (spin): bubble / simulated" \
    "$(first_row "$work/synthetic.log")" ""
  printf '| %-62s | %-22s | %s |\n' "4-rank transformer 1f1b on one GPU over MPI: bubble / simulated" \
    "$(first_row "$work/transformer4.log")" ""
}
# Bad input (docs/gpu.md): each refused with one line and exit code 2, before anything is written.
# (No `set -e` in there: it would end the script at the refused command's exit code 2, before its check.)
refused() {  # refused PATTERN COMMAND...: exit code 2, PATTERN in the output, no results file
  local pattern=$1 rc=0; shift
  echo "\$ $*"
  "$@" >"$work/refused.out" 2>&1 || rc=$?
  grep -v '^\[' "$work/refused.out"  # without UCX's warnings
  if [[ $rc == 2 ]] && grep -q -- "$pattern" "$work/refused.out" && ! ls "$work"/never*.h5 >/dev/null 2>&1; then
    echo "refused as expected (exit 2)"
  else
    echo "NOT refused as expected: exit $rc, wanted 2 and '$pattern'"
    return 1
  fi
}

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  step smoke 30 sh -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader && \"$bin/pipebench\" info"
else
  if [[ $missing == *libcuda.so.1* ]]; then  # a CUDA build starts only where the driver is installed
    results+=("$(printf '%-12s %s' smoke "SKIP (compiled and linked; no CUDA driver, libcuda.so.1, to start it)")")
    # The toolkit's driver stub lets it start and ask for a device: it must refuse, exit code 2.
    for d in ${CUDA_HOME:+$CUDA_HOME/lib64/stubs} /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/x86_64-linux/lib/stubs; do
      if [[ -e $d/libcuda.so ]]; then
        mkdir -p "$work/stub" && ln -sf "$d/libcuda.so" "$work/stub/libcuda.so.1"
        step no-device 30 bash -c "$(declare -f refused); work=$work
          refused 'no Cuda device is usable here' env LD_LIBRARY_PATH=$work/stub:${LD_LIBRARY_PATH:-} ${mpiexec[*]} -n 1 $bin/pipebench run --synthetic-mode spin --schedule 1f1b -o $work/never0.h5"
        break
      fi
    done
  else
    step smoke 30 "$bin/pipebench" info
  fi
  say "no GPU on this machine (nvidia-smi finds none): nothing run on a device"
  summary
  for r in "${results[@]}"; do [[ $r == *FAIL* ]] && exit 1; done
  exit 0
fi
step kernels 90 "$bin/test_kernels" --gtest_brief=1
# The runs' workloads: a small transformer (h = 1024, s = 512, 4 layers) and synthetic stages of 2, 4
# and 2 ms (F, B, W).
model=(--workload transformer -m 4 --layers 4 --hidden 1024 --heads 16 --seq 512 --micro-batch-size 2 --vocab 8192
       --warmup 1 --steps 3)
synth=(--workload synthetic -m 8 --tf 2ms --tb 4ms --tw 2ms --warmup 1 --steps 3)
step transformer 60 "${mpiexec[@]}" -n 1 "$bin/pipebench" run "${model[@]}" --schedule 1f1b -o "$work/transformer.h5"
step synthetic 45 "${mpiexec[@]}" -n 4 "$bin/pipebench" run "${synth[@]}" --schedule 1f1b,zbv --synthetic-mode spin \
  -o "$work/synthetic.h5"
# Issue 25's figures: the block against cuBLAS at h = 4096, a = 32, s = 2048, b = 1 (fp32), fused against
# unfused attention at s = 2048, the block's products in bf16 against cuBLAS's bf16 GEMM (cublasGemmEx,
# fp32 sums), and a 4-rank pipeline of the transformer sharing the GPU over MPI.
step kernels-fig 180 "$bin/bench_kernels" --size=gpu --benchmark_filter='FIW_vs_sgemm|FIW_vs_gemm16|fused_vs_unfused' \
  --benchmark_repetitions=3 --benchmark_min_time=0.05
step transformer4 90 "${mpiexec[@]}" -n 4 "$bin/pipebench" run "${model[@]}" --schedule 1f1b -o "$work/transformer4.h5"
# The same on the host clock (sleep), for comparison: the spin above runs as device kernels of 4
# processes sharing the GPU (time-sliced between contexts unless MPS runs).
step synth-sleep 45 "${mpiexec[@]}" -n 4 "$bin/pipebench" run "${synth[@]}" --schedule 1f1b,zbv --synthetic-mode sleep \
  -o "$work/synthetic-sleep.h5"
step nccl 45 "${mpiexec[@]}" -n 1 "$bin/mpitest_comm_nccl"
# run over NCCL: one rank, since NCCL refuses two ranks on one GPU (docs/gpu.md "run --backend nccl").
step nccl-run 45 "${mpiexec[@]}" -n 1 "$bin/pipebench" run --backend nccl "${synth[@]}" --schedule 1f1b,zbv \
  --synthetic-mode spin -o "$work/nccl-run.h5"
step nccl-transformer 60 "${mpiexec[@]}" -n 1 "$bin/pipebench" run --backend nccl "${model[@]}" --schedule 1f1b \
  -o "$work/nccl-transformer.h5"
ngpu=$(nvidia-smi -L | wc -l)
# With a GPU per rank: the links, and the tensor- and data-parallel collectives over NCCL.
if (( ngpu >= 2 )); then
  n=$(( ngpu >= 4 ? 4 : 2 ))
  maps=$( (( n == 4 )) && echo 1x4x1,2x2x1,1x2x2 || echo 1x2x1,2x1x1,1x1x2 )
  step nccl-links 60 "${mpiexec[@]}" -n "$n" "$bin/pipebench" run --backend nccl "${synth[@]}" \
    --schedule 1f1b,zbv,dualpipev,interleaved --synthetic-mode spin -o "$work/nccl-links.h5"
  step nccl-3d 120 "${mpiexec[@]}" -n "$n" "$bin/pipebench" run --backend nccl "${model[@]}" --mapping "$maps" \
    --schedule 1f1b,zbv --tie-embeddings -o "$work/nccl-3d.h5"
  step nccl-dualpipe 90 "${mpiexec[@]}" -n 2 "$bin/pipebench" run --backend nccl "${model[@]}" --schedule dualpipe \
    -o "$work/nccl-dualpipe.h5"
fi
step refusals 60 bash -c "$(declare -f refused); work=$work
  refused 'no Cuda device is usable here' env CUDA_VISIBLE_DEVICES= ${mpiexec[*]} -n 1 $bin/pipebench run --synthetic-mode spin --schedule 1f1b -o $work/never1.h5 &&
  refused 'needs one GPU per rank: $((ngpu + 1)) ranks' ${mpiexec[*]} -n $((ngpu + 1)) $bin/pipebench run --backend nccl --schedule 1f1b -o $work/never2.h5 &&
  refused 'not CUDA-aware' ${mpiexec[*]} -n 2 $bin/pipebench run --workload transformer --mapping 2x1x1 --schedule 1f1b -o $work/never3.h5"
summary
figures
[[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$work"/*.log "$OUT"/ 2>/dev/null
rm -rf "$work"
for r in "${results[@]}"; do [[ $r == *FAIL* ]] && exit 1; done
exit 0
