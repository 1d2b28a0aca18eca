#!/bin/bash
# Stop tests of `pipebench run` (issue 12): SIGUSR1 or SIGTERM, as Slurm sends them before the time
# limit or on preemption, to one rank or to all, between configurations or inside a step. Each case
# checks that every rank stops at the same point (no hang, no error line), that the job exits with 75
# (EX_TEMPFAIL, bench/run/stop.hpp), that the file holds exactly the configurations finished before,
# and that `--append --resume` then runs exactly the missing ones, so that the file ends up with
# every configuration exactly once. The ctest TIMEOUT catches a hang.
# Usage: stop.sh MPIEXEC PIPEBENCH WORKDIR CASE
#   CASE: usr1_root_between (rank 0 gets SIGUSR1 before configuration 2), usr1_rank_between (rank 2),
#         term_in_step (rank 1 gets SIGTERM inside configuration 2, which is abandoned), term_root_in_step
#         (the same on rank 0: issue 27 saw several ranks' contradictory errors then),
#         launcher (SIGUSR1 to mpiexec, which passes it to every rank, while the sweep runs)
set -u
MPIEXEC=$1 B=$2 WORK=$3 CASE=$4
fail() { echo "FAIL ($CASE): $*"; echo "--- output ---"; cat "$WORK"/out*.txt "$WORK"/err*.txt 2>/dev/null; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
OUT="$WORK/r.h5"
MS=4,6,8
STEPS=1
case $CASE in
  usr1_root_between) FAULT=0:2:usr1; EXPECT="SIGUSR1 before configuration 2 of 3: 1 configuration\(s\) written" ;;
  usr1_rank_between) FAULT=2:2:usr1; EXPECT="SIGUSR1 before configuration 2 of 3: 1 configuration\(s\) written" ;;
  term_root_in_step) FAULT=0:2:term; STEPS=3
                     EXPECT="SIGTERM during configuration 2 of 3 \(abandoned, not written\): 1 configuration\(s\) written" ;;
  term_in_step)      FAULT=1:2:term; STEPS=3
                     EXPECT="SIGTERM during configuration 2 of 3 \(abandoned, not written\): 1 configuration\(s\) written" ;;
  launcher)          FAULT=; MS=4,5,6,7,8,9,10,11; EXPECT="SIGUSR1 (before|during) configuration [0-9] of 8" ;;
  *) fail "unknown case" ;;
esac
ARGS=(run --schedule 1f1b -m $MS --tf 500us --tb 1ms --tw 500us --warmup 0 --steps $STEPS --timeout 10s -o "$OUT")
NCONF=$(tr ',' '\n' <<<"$MS" | wc -l)

start=$(date +%s)
if [ "$CASE" = launcher ]; then
  # The configurations take long enough (10 ms stages, 3 steps) that the signal lands mid-sweep.
  ARGS=(run --schedule 1f1b -m $MS --tf 10ms --tb 20ms --tw 10ms --warmup 0 --steps 3 --timeout 10s -o "$OUT")
  "$MPIEXEC" -n 4 "$B" "${ARGS[@]}" >out.txt 2>err.txt &
  pid=$!
  for i in $(seq 1 200); do grep -q '^# \[2/' err.txt 2>/dev/null && break; sleep 0.1; done
  kill -USR1 $pid
  wait $pid
  rc=$?
else
  PIPEBENCH_TEST_FAULT=$FAULT "$MPIEXEC" -n 4 "$B" "${ARGS[@]}" >out.txt 2>err.txt
  rc=$?
fi
elapsed=$(( $(date +%s) - start ))
left=$(pgrep -f -- "$OUT")
if [ -n "$left" ]; then kill -9 $left; fail "ranks left behind: $left"; fi

[ "$rc" -eq 75 ] || fail "exit code $rc, expected 75"
[ "$elapsed" -le 30 ] || fail "took ${elapsed} s"
grep -q "pipebench: error:" err.txt out.txt && fail "an error line"
# One line from one rank: not MPICH's own "Abort(75) on node 0 ..." after it (issue 27).
[ "$(grep -cv '^#' err.txt)" -eq 1 ] || fail "expected one line besides the # notes, found $(grep -cv '^#' err.txt)"
[ "$(grep -c 'pipebench: stopped by' err.txt)" -eq 1 ] || fail "expected one 'stopped' line"
grep -Eq "pipebench: stopped by $EXPECT" err.txt || fail "message does not match '$EXPECT'"

"$B" report "$OUT" >report.txt 2>&1 || fail "report exits non-zero: $(cat report.txt)"
done_before=$(sed -n 's/.* \([0-9]*\) complete run(s).*/\1/p' report.txt)
[ -n "$done_before" ] || fail "no run count in the report: $(cat report.txt)"
written=$(sed -n 's/.*: \([0-9]*\) configuration(s) written.*/\1/p' err.txt)
[ "$written" = "$done_before" ] || fail "the message says $written written, the file holds $done_before"
[ "$(grep -cE '^ +[0-9]+  1f1b ' out.txt)" -eq "$done_before" ] || fail "table rows differ from the runs in the file"
if [ "$CASE" != launcher ]; then [ "$done_before" -eq 1 ] || fail "expected 1 run before the stop, found $done_before"; fi
[ "$done_before" -lt "$NCONF" ] || fail "the signal came after the sweep ended"

"$MPIEXEC" -n 4 "$B" "${ARGS[@]}" --append --resume >out2.txt 2>err2.txt || fail "resume failed"
[ "$(grep -c 'already in .*, skipped (--resume)' err2.txt)" -eq "$done_before" ] || fail "resume did not skip exactly the $done_before written"
[ "$(grep -cE '^ +[0-9]+  1f1b ' out2.txt)" -eq $((NCONF - done_before)) ] || fail "resume did not run exactly the missing ones"
"$B" report "$OUT" >report.txt 2>&1 || fail "report after resume exits non-zero"
grep -q "$NCONF complete run(s)" report.txt || fail "expected $NCONF runs after resume: $(cat report.txt)"
# Every configuration exactly once: the m column of the runs table.
ms=$(awk '$2 == "1f1b" {print $7}' report.txt | sort -n | tr '\n' ',' | sed 's/,$//')
[ "$ms" = "$MS" ] || fail "runs in the file have m = $ms, expected each of $MS once"
echo "ok: $CASE exit $rc in ${elapsed} s, $done_before run(s) kept, resume ran the $((NCONF - done_before)) missing"
