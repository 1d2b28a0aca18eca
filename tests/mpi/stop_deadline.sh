#!/bin/bash
# Issue 27: a stop signal must end `pipebench run` within --timeout even when the sweep is inside one
# long action (a forward of 2.5 s here; --stage-cost 16777217 in the issue ran 10 minutes on). SIGUSR1
# goes to mpiexec (hydra forwards it to every rank) 1 s into the first step of a 4-micro-batch 1F1B
# whose step takes more than 10 s; with --timeout 3 s the job must end within 3 s + 2 s of it, with
# exit code 75, one line, and the file without the abandoned configuration.
# `comm` keeps the same contract (case comm): SIGUSR1 1 s into a benchmark of many 32 MiB all-reduces
# ends it within --timeout 3 s + 2 s, exit code 75, one line.
# Usage: stop_deadline.sh MPIEXEC PIPEBENCH WORKDIR [run|comm]
set -u
MPIEXEC=$1 B=$2 WORK=$3 CASE=${4:-run}
fail() { echo "FAIL: $*"; cat "$WORK/err.txt" 2>/dev/null; exit 1; }
# stop WHAT: SIGUSR1 to the job now, wait up to 15 s for it, set rc and took (seconds), and fail unless
# it ended within --timeout 3 s + 2 s with exit code 75.
stop() {
  t0=$(date +%s.%N)
  kill -USR1 $job
  for _ in $(seq 150); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then kill -9 $job; fail "$1 still ran 15 s after SIGUSR1"; fi
  wait $job; rc=$?
  took=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
  python3 -c "import sys; sys.exit(0 if $took <= 5 else 1)" || fail "$1 ended $took s after SIGUSR1, --timeout is 3 s"
  [ $rc -eq 75 ] || fail "$1: exit $rc, expected 75"
}
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
if [ "$CASE" = comm ]; then
  "$MPIEXEC" -n 2 "$B" comm all_reduce -b 32M -e 32M -n 100000 -w 1 --poll-us 100 --timeout 3s --out "$WORK/c.h5" >out.txt 2>err.txt &
  job=$!
  sleep 2
  stop comm
  [ "$(grep -cv '^#' err.txt)" -eq 1 ] && grep -q "^pipebench: stopped by SIGUSR1: the communication benchmark ended within --timeout 3 s" err.txt ||
    fail "comm: message: $(cat err.txt)"
  echo "ok: SIGUSR1 ended comm $took s later (exit 75)"
  exit 0
fi
"$MPIEXEC" -n 2 "$B" run --schedule 1f1b -m 4 --tf 2500ms --tb 1ms --tw 0ms --warmup 0 --steps 1 --timeout 3s \
  -o "$WORK/r.h5" >out.txt 2>err.txt &
job=$!
for _ in $(seq 200); do grep -q '^# \[1/1\]' err.txt && break; sleep 0.05; done
sleep 1
stop "the job"
# One line in all, besides the # notes: not MPICH's own "Abort(75) on node 0 ..." after it (issue 27).
[ "$(grep -cv '^#' err.txt)" -eq 1 ] && grep -q "^pipebench: stopped by SIGUSR1: the sweep reached no safe point within --timeout 3 s" err.txt ||
  fail "message: $(cat err.txt)"
"$B" report r.h5 | grep -q "0 complete run(s)" || fail "the abandoned configuration is in the file"
echo "ok: SIGUSR1 inside a 2.5 s action ended the job $took s later (exit 75)"
