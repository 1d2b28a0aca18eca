#!/bin/bash
# Issue 27: under an address-space limit (ulimit -v, as a batch system may set) a sweep that cannot fit
# is refused up front, one line and exit 2 before anything runs, instead of std::bad_alloc mid-run: an
# activation of 4 GiB + 1 byte with two in flight per rank under ulimit -v 8000000 (7.6 GiB).
# Usage: memory_limit.sh MPIEXEC PIPEBENCH WORKDIR
set -u
MPIEXEC=$1 B=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
(ulimit -v 8000000; "$MPIEXEC" -n 2 "$B" run --schedule 1f1b -m 4 --activation-bytes 4294967297 --tf 500us --tb 1ms \
  --tw 500us --warmup 0 --steps 1 -o "$WORK/never.h5" >out.txt 2>err.txt)
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: exit $rc, expected 2: $(cat err.txt)"; exit 1; }
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "needs about 8.00 GiB on pipeline rank 0, but this node has [0-9.]* GiB available per rank (MemAvailable, the cgroup's memory limit and ulimit -v)" err.txt ||
  { echo "FAIL: message: $(cat err.txt)"; exit 1; }
[ ! -e never.h5 ] || { echo "FAIL: the refused sweep left its results file"; exit 1; }
echo "ok: refused up front under ulimit -v"
