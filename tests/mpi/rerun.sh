#!/bin/bash
# `pipebench rerun` (issue 12): a stored run repeated from its stored configuration has the same key
# (every setting equal), the comparison with the original finds nothing different on the same machine
# and build, a run id that does not exist is exit 2 with one line, another rank count is refused.
# A run from elsewhere (report_fixtures' results.h5: other hosts, no commit) is rerun here and every
# difference is named by what it is.
# Usage: rerun.sh MPIEXEC PIPEBENCH WORKDIR FIXTURE_DIR
set -u
MPIEXEC=$1 B=$2 WORK=$3 FIX=$4
fail() { echo "FAIL: $*"; cat "$WORK"/*.txt 2>/dev/null; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
key() { "$B" report "$1" --run "$2" --json | sed -n 's/^  "key": \(.*\),$/\1/p'; }
"$MPIEXEC" -n 2 "$B" run --schedule 1f1b,zbv -m 4 --tf 700us --tb 1ms --tw 300us --warmup 0 --steps 2 \
  --p2p-bytes 4096 -o a.h5 >run.txt 2>&1 || fail "run"
"$MPIEXEC" -n 2 "$B" rerun a.h5 --run 2 -o b.h5 >out.txt 2>err.txt || fail "rerun exit $?"
grep -q "^# rerun written as run 1 of b.h5; compared with run 2 of a.h5: same configuration, commit, libraries, rank count, hosts and hardware$" out.txt ||
  fail "comparison line"
k=$(key a.h5 2)
[ -n "$k" ] && [ "$k" = "$(key b.h5 1)" ] || fail "keys differ: $k vs $(key b.h5 1)"
# Again: appended as run 2 of the same rerun file.
"$MPIEXEC" -n 2 "$B" rerun a.h5 --run 2 -o b.h5 >out.txt 2>err.txt || fail "second rerun"
grep -q "^# rerun written as run 2 of b.h5" out.txt || fail "second rerun not appended"
# A transformer run whose settings are not the defaults: every one is repeated (issue 24's ZeRO flags
# and the optimizer's were dropped before the key -> flag table, bench/cmd/rerun_arguments.cpp).
"$MPIEXEC" -n 2 "$B" run --workload transformer --hidden 32 --heads 4 --seq 16 --vocab 64 --layers 2 --schedule 1f1b \
  --mapping 1x1x2 -m 2 --warmup 0 --steps 1 --zero 3 --gather-prefetch off --optimizer adam --weight-decay 0.1 \
  --precision bf16 --grad-reduce-dtype bf16 --lr 0.01 -o t.h5 >run.txt 2>&1 || fail "transformer run"
"$MPIEXEC" -n 2 "$B" rerun t.h5 --run 1 -o tr.h5 >out.txt 2>err.txt || fail "transformer rerun exit $?"
grep -q "^# rerun written as run 1 of tr.h5; compared with run 1 of t.h5: same configuration, commit" out.txt ||
  fail "transformer rerun is another configuration"
[ "$(key t.h5 1)" = "$(key tr.h5 1)" ] || fail "transformer keys differ"
sum=$(md5sum <b.h5)
"$MPIEXEC" -n 2 "$B" rerun a.h5 --run 7 -o b.h5 >out.txt 2>err.txt
rc=$?
[ $rc -eq 2 ] || fail "unknown run: exit $rc"
[ "$(grep -c 'pipebench: error: run 7 is not a complete run' err.txt)" -eq 1 ] || fail "unknown run: message"
"$MPIEXEC" -n 4 "$B" rerun a.h5 --run 1 -o b.h5 >out.txt 2>err.txt
rc=$?
[ $rc -eq 2 ] || fail "other rank count: exit $rc"
[ "$(grep -c 'ran on 2 ranks and this job has 4: start the rerun on 2 ranks (differs: rank count)' err.txt)" -eq 1 ] || fail "rank count message"
[ "$(md5sum <b.h5)" = "$sum" ] || fail "a refused rerun changed b.h5"
cp "$FIX/results.h5" other.h5 || fail "fixture missing"
"$MPIEXEC" -n 2 "$B" rerun other.h5 --run 1 -o c.h5 >out.txt 2>err.txt || fail "rerun of other.h5 exit $?"
grep -q "^# rerun written as run 1 of c.h5; compared with run 1 of other.h5, [0-9]* difference(s):$" out.txt || fail "differences line"
grep -q "^#   differs: commit: pipebench_commit '' -> '" out.txt || fail "commit difference not named"
grep -q "^#   differs: libraries: mpi '' -> '" out.txt || fail "library difference not named"
grep -q "^#   differs: hosts: placement 'node01:0,node02:1' -> '" out.txt || fail "host difference not named"
echo "ok: rerun"
