#!/bin/bash
# Fault tests of `pipebench run` (issue 8): a rank stopped (SIGSTOP) between configurations or inside a
# step, or the writer (rank 0) killed with SIGKILL, through the test-only hook PIPEBENCH_TEST_FAULT
# (bench/run/configuration.hpp). Each case checks that the job ends on its own (non-zero, within a few
# --timeout), with exactly one `pipebench: error:` line naming the stopped rank, that the results file
# stays readable with the run finished before, and that `--append --resume` runs exactly the missing
# configurations. The ctest TIMEOUT catches a hang.
# Usage: faults.sh MPIEXEC PIPEBENCH WORKDIR CASE   (CASE: stop_between, stop_root_between, stop_in_step,
#        stop_root_in_step, kill_writer, stop_after_sweep)
set -u
MPIEXEC=$1 B=$2 WORK=$3 CASE=$4
T=2  # --timeout, seconds
fail() { echo "FAIL ($CASE): $*"; echo "--- output ---"; cat "$WORK/out.txt" "$WORK/err.txt" 2>/dev/null; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
OUT="$WORK/r.h5"  # absolute: it tells this test's ranks from any other's
ARGS=(run --schedule 1f1b -m 4,6,8 --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1 --timeout ${T}s -o "$OUT")

case $CASE in
  stop_between)      FAULT=2:2:stop; EXPECT="rank 2 \(host [^)]+\) did not reach the start of configuration 2 within --timeout 2 s; the other 3 ranks did" ;;
  stop_root_between) FAULT=0:2:stop; EXPECT="rank 0 \(host [^)]+\) did not release the start of configuration 2 within --timeout 2 s" ;;
  stop_in_step)      FAULT=2:2:step; EXPECT="rank 2 \(host [^)]+\) stopped answering during step 0 of configuration 2: no answer to rank 0's roll call" ;;
  stop_root_in_step) FAULT=0:2:step; EXPECT="rank 0 \(host [^)]+\) did not act on the alarm of rank [0-9]+ within --timeout 2 s" ;;
  kill_writer)       FAULT=0:2:kill; EXPECT="" ;;
  stop_after_sweep)  FAULT=3:0:end; EXPECT="rank 0: MPI_Finalize did not complete within --timeout 2 s, though every rank reached the end of the sweep" ;;
  *) fail "unknown case" ;;
esac

start=$(date +%s)
PIPEBENCH_TEST_FAULT=$FAULT "$MPIEXEC" -n 4 "$B" "${ARGS[@]}" >out.txt 2>err.txt
rc=$?
elapsed=$(( $(date +%s) - start ))
# A stopped rank must not outlive the job (the launcher kills it with the rest).
for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -f -- "$OUT" >/dev/null || break; sleep 0.5; done
left=$(pgrep -f -- "$OUT")
if [ -n "$left" ]; then kill -9 $left; fail "ranks left behind: $left"; fi

[ "$rc" -ne 0 ] || fail "exit code 0"
# Rank 0 names a rank within --timeout (twice for a roll call); a stopped rank 0 is named by rank 1
# after twice the timeout: 4 T plus start-up is the most any case may take.
[ "$elapsed" -le $((4 * T + 8)) ] || fail "took ${elapsed} s"
errors=$(grep -c "pipebench: error:" out.txt err.txt | awk -F: '{s += $2} END {print s}')
if [ -n "$EXPECT" ]; then
  [ "$errors" -eq 1 ] || fail "$errors error lines, expected 1"
  grep -Eq "pipebench: error: $EXPECT" err.txt || fail "message does not match '$EXPECT'"
fi

"$B" report "$OUT" >report.txt 2>&1 || fail "report exits non-zero: $(cat report.txt)"
if [ "$CASE" = stop_after_sweep ]; then
  grep -q "3 complete run(s)" report.txt || fail "expected all 3 runs: $(cat report.txt)"
  "$MPIEXEC" -n 4 "$B" "${ARGS[@]}" --append --resume >out.txt 2>err.txt || fail "resume failed"
  [ "$(grep -c 'already in .*, skipped (--resume)' err.txt)" -eq 3 ] || fail "resume did not skip all 3 configurations"
  echo "ok: $CASE ended with exit $rc in ${elapsed} s, all runs in the file, resume ran nothing"
  exit 0
fi
grep -q "1 complete run(s)" report.txt || fail "expected the one run finished before: $(cat report.txt)"

"$MPIEXEC" -n 4 "$B" "${ARGS[@]}" --append --resume >out.txt 2>err.txt || fail "resume failed"
[ "$(grep -c 'already in .*, skipped (--resume)' err.txt)" -eq 1 ] || fail "resume did not skip exactly one configuration"
grep -q "m=4: already in" err.txt || fail "resume skipped the wrong configuration"
[ "$(grep -cE '^ +[0-9]+  1f1b ' out.txt)" -eq 2 ] || fail "resume did not run exactly the two missing configurations"
"$B" report "$OUT" >report.txt 2>&1 || fail "report after resume exits non-zero"
grep -q "3 complete run(s)" report.txt || fail "expected 3 runs after resume: $(cat report.txt)"
echo "ok: $CASE ended with exit $rc in ${elapsed} s, file intact, resume ran the 2 missing configurations"
