#!/usr/bin/env bash
# Builds and installs Kokkos 4.6.01 and KokkosKernels 4.6.01 for pipebench, once, into a cache
# directory outside the checkout, and prints the install prefix on its last line (stdout; progress
# goes to stderr). Usage:
#   jobs/kokkos.sh openmp|cuda [TARBALL_DIR_OR_URL]
#     openmp  Serial + OpenMP, KokkosKernels on the host BLAS
#     cuda    Serial + CUDA (PIPEBENCH_CUDA_ARCH, default HOPPER90 = sm_90) through nvcc_wrapper,
#             KokkosKernels on cuBLAS; compiles without a GPU
#   TARBALL_DIR_OR_URL: a directory or URL prefix holding the release tarballs kokkos-4.6.01.tar.gz and
#   kokkos-kernels-4.6.01.tar.gz (default: $PIPEBENCH_KOKKOS_SOURCES, else $PIPEBENCH_CACHE/sources).
#   They are not kept in the repository; jobs/kokkos-sha256sums holds their checksums.
# Exit codes: 0 installed (the prefix printed), 2 bad input, 3 no sources given and none in the default
# directory (callers such as jobs/test.sh then skip the Kokkos 4 builds and say so), 1 a build failed.
# KokkosKernels is reduced to its BLAS component with no pre-built kernels: KokkosBlas::gemm reaches
# BLAS or cuBLAS through its headers, so it builds in seconds instead of minutes.
# Environment: PIPEBENCH_CACHE (default ~/.cache/pipebench), CUDA_HOME (default /usr/local/cuda),
# PIPEBENCH_JOBS (default nproc), PIPEBENCH_KOKKOS_SHA256=skip to accept tarballs that differ from
# jobs/kokkos-sha256sums (e.g. GitHub's release assets).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=4.6.01
backend=${1:-}
source=${2:-}
case $backend in
  openmp | cuda) ;;
  *) echo "pipebench: error: jobs/kokkos.sh: first argument '${backend}' must be openmp or cuda" >&2; exit 2 ;;
esac
cache=${PIPEBENCH_CACHE:-$HOME/.cache/pipebench}
arch=${PIPEBENCH_CUDA_ARCH:-HOPPER90}
prefix=$cache/kokkos-$version-$backend
[[ $backend == cuda && $arch != HOPPER90 ]] && prefix+=-$arch
jobs=${PIPEBENCH_JOBS:-$(nproc)}
if [[ -z $source ]]; then
  source=${PIPEBENCH_KOKKOS_SOURCES:-$cache/sources}
  if [[ ! -f $source/kokkos-$version.tar.gz || ! -f $source/kokkos-kernels-$version.tar.gz ]] &&
     [[ ! -f $prefix/.pipebench-complete ]]; then
    echo "# kokkos.sh: no Kokkos $version release tarballs in $source (set PIPEBENCH_KOKKOS_SOURCES or pass a directory or URL)" >&2
    exit 3
  fi
fi
say() { echo "# kokkos.sh: $*" >&2; }

if [[ -f $prefix/.pipebench-complete ]]; then
  say "reusing $prefix ($(cat "$prefix/.pipebench-complete"))"
  echo "$prefix"
  exit 0
fi

work=$cache/work-$version-$backend
rm -rf "$work" "$prefix"
mkdir -p "$work/src"
log=$work/build.log
fetch() {  # fetch NAME: copy or download a tarball into $work/src and check it
  local name=$1
  if [[ $source == http://* || $source == https://* ]]; then
    say "downloading $source/$name"
    curl -fsSL -o "$work/src/$name" "$source/$name"
  elif [[ -f $source/$name ]]; then
    cp "$source/$name" "$work/src/$name"
  else
    echo "pipebench: error: jobs/kokkos.sh: '$source/$name' not found (give a directory or URL holding it)" >&2
    exit 2
  fi
  local want
  want=$(awk -v n="$name" '$2 == n {print $1}' "$here/kokkos-sha256sums")
  if [[ -n $want && ${PIPEBENCH_KOKKOS_SHA256:-} != skip ]] &&
     [[ $(sha256sum "$work/src/$name" | cut -d' ' -f1) != "$want" ]]; then
    echo "pipebench: error: jobs/kokkos.sh: $name differs from jobs/kokkos-sha256sums" \
         "(set PIPEBENCH_KOKKOS_SHA256=skip to accept it)" >&2
    exit 2
  fi
  tar xzf "$work/src/$name" -C "$work/src"
}
fetch kokkos-$version.tar.gz
fetch kokkos-kernels-$version.tar.gz
ksrc=$work/src/kokkos-$version
kksrc=$work/src/kokkos-kernels-$version

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
common=("${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF
        -DCMAKE_INSTALL_PREFIX="$prefix")
kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON)
kk_opts=(-DKokkos_ROOT="$prefix" -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF
         -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON -DKokkosKernels_ADD_DEFAULT_ETI=OFF)
if [[ $backend == openmp ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  compiler=${CXX:-g++}
  kokkos_opts+=(-DKokkos_ENABLE_OPENMP=ON "${launcher[@]}")
  # LAPACK TPL stays on (its default): the BLAS TPL source calls crot_/zrot_, which reference BLAS lacks.
  kk_opts+=(-DKokkosKernels_ENABLE_TPL_BLAS=ON "-DF77_BLAS_MANGLE=(name,NAME) name ## _" "${launcher[@]}")
else
  cuda_home=${CUDA_HOME:-/usr/local/cuda}
  if [[ ! -x $cuda_home/bin/nvcc ]]; then
    echo "pipebench: error: jobs/kokkos.sh: no nvcc at $cuda_home/bin (set CUDA_HOME)" >&2
    exit 2
  fi
  export PATH=$cuda_home/bin:$PATH
  # Kokkos 4.6.01 does not compile against the CUDA 13 runtime API; 4.7.01 has the fix upstream.
  say "applying jobs/patches/kokkos-$version-cuda13.patch (CUDA 13 runtime API, nvcc_wrapper default sm_80)"
  (cd "$ksrc" && patch -s -p1 < "$here/patches/kokkos-$version-cuda13.patch")
  compiler=$ksrc/bin/nvcc_wrapper
  kokkos_opts+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_"$arch"=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON)
  kk_opts+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF
            -DKokkosKernels_ENABLE_TPL_CUSOLVER=OFF)
fi

step() {  # step NAME COMMAND...: run it, logging; on failure show the log's tail
  local name=$1; shift
  local t0=$SECONDS
  if ! "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "pipebench: error: jobs/kokkos.sh: $name failed (full log: $log)" >&2
    exit 1
  fi
  say "$name: $((SECONDS - t0)) s"
}
say "building Kokkos $version ($backend) into $prefix, log $log"
step "configure Kokkos" cmake -S "$ksrc" -B "$work/build-kokkos" "${common[@]}" -DCMAKE_CXX_COMPILER="$compiler" "${kokkos_opts[@]}"
step "build Kokkos" nice -n 10 cmake --build "$work/build-kokkos" -j "$jobs"
step "install Kokkos" cmake --install "$work/build-kokkos"
[[ $backend == cuda ]] && compiler=$prefix/bin/nvcc_wrapper
step "configure KokkosKernels" cmake -S "$kksrc" -B "$work/build-kk" "${common[@]}" -DCMAKE_CXX_COMPILER="$compiler" "${kk_opts[@]}"
step "build KokkosKernels" nice -n 10 cmake --build "$work/build-kk" -j "$jobs"
step "install KokkosKernels" cmake --install "$work/build-kk"
label=$backend
[[ $backend == cuda ]] && label+=" $arch"
echo "Kokkos $version $label, built $(date -u +%FT%TZ)" >"$prefix/.pipebench-complete"
rm -rf "$work"
echo "$prefix"
