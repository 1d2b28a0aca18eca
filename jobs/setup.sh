#!/usr/bin/env bash
# Installs what the build needs (Debian 12 packages, as root) and builds the release preset.
# Idempotent and quick when everything is already there. Usage: jobs/setup.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}

# docs/design.md "Dependencies". MPICH only: libhdf5-mpi-dev would pull in Open MPI.
packages=(build-essential cmake git ccache pkg-config
          mpich libmpich-dev libhdf5-mpich-dev hdf5-tools
          libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libopenblas0-pthread
          libcli11-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev
          python3   # tests/docs/doccheck.py (standard library only)
          protobuf-compiler   # protoc --decode: the Chakra trace test (tests/cli/traces.cmake)
          clang libclang-rt-14-dev)  # the debug-asan preset: sanitizers and libFuzzer (docs/fuzzing.md)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "# pipebench setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "pipebench: error: missing packages; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
