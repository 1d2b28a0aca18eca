#!/bin/bash
# Issue 27's defects of the results reader and merge, as a hostile user meets them:
#   reader     a reading child that spins (as libhdf5 does on some damaged runs; the test hook
#              PIPEBENCH_TEST_READER=spin) is given up within a few seconds, exit 2; and when its
#              parent is killed or interrupted the child dies with it instead of spinning on, orphaned
#   writes     output that cannot be written (stdout on /dev/full, a file past `ulimit -f`) is one
#              line and exit 2, no SIGXFSZ death, no temporary file left; --inject-failure (a test
#              hook) is refused in a --config file
#   append     a run 1 that the reader gives up on after 3 s (PIPEBENCH_TEST_READER=spin-run) in the file
#              of a `run --append --timeout 1s`: the other rank waits for rank 0's reading, the job
#              appends its run (exit 0) and warns of the damaged one, instead of blaming rank 0 and exit 1
#   merge      concurrent `merge --append` into one output, and a `run --append` among them, all
#              succeed and the output holds every run of all of them (the file lock)
# Usage: results_guard.sh PIPEBENCH MPIEXEC FIXTURE_DIR WORKDIR CASE
set -u
B=$1 MPIEXEC=$2 FIX=$3 WORK=$4 CASE=$5
fail() { echo "FAIL ($CASE): $*"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
runs() { "$B" report "$1" | sed -n 's/^# pipebench results .*: \([0-9]*\) complete run(s).*/\1/p'; }
case $CASE in
reader)
  cp "$FIX/results.h5" . || fail "fixture missing"
  start=$(date +%s.%N)
  PIPEBENCH_TEST_READER=spin timeout 20 "$B" report results.h5 >out.txt 2>err.txt
  rc=$?
  took=$(python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $start))")
  [ $rc -eq 2 ] || fail "a spinning reader: exit $rc after $took s, expected 2 within a few seconds: $(cat err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "made no progress for 3 s" err.txt || fail "message: $(cat err.txt)"
  python3 -c "import sys; sys.exit(0 if $took < 8 else 1)" || fail "took $took s to give up"
  for sig in KILL TERM INT; do
    PIPEBENCH_TEST_READER=spin "$B" report results.h5 >/dev/null 2>&1 &
    parent=$!
    child=
    for _ in $(seq 50); do child=$(pgrep -P $parent) && break; sleep 0.05; done
    [ -n "$child" ] || { kill -9 $parent; fail "no reading child appeared"; }
    kill -$sig $parent
    wait $parent 2>/dev/null
    # alive: still there and not a zombie (a container's init may never reap it)
    alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
    for _ in $(seq 20); do alive "$child" || break; sleep 0.05; done
    if alive "$child"; then kill -9 "$child"; fail "SIG$sig to the reader left its child $child running"; fi
  done
  echo "ok: a spinning reader gave up after $took s (exit 2); its child died with its parent on SIGKILL, SIGTERM, SIGINT"
  ;;
writes)
  cp "$FIX/results.h5" "$FIX/compare_b.h5" . || fail "fixture missing"
  one() {  # one DESCRIPTION COMMAND...: exit 2 and one error line, the same for every command
    local d=$1; shift
    "$@" >/dev/full 2>err.txt; local rc=$?
    # (run, comm and rerun print their progress notes on stderr, lines that start with '#')
    grep -v '^#' err.txt >said.txt
    [ $rc -eq 2 ] && [ "$(wc -l <said.txt)" -eq 1 ] &&
      grep -q '^pipebench: error: standard output could not be written (.*): what was printed is incomplete$' said.txt ||
      fail "$d: exit $rc, said: $(cat err.txt)"
  }
  one "report to /dev/full" "$B" report results.h5
  one "report --json to /dev/full" "$B" report results.h5 --json
  one "compare to /dev/full" "$B" compare results.h5 compare_b.h5 --allow-different
  one "info to /dev/full" "$B" info
  one "simulate to /dev/full" "$B" simulate --schedule 1f1b -p 4 -m 8
  one "simulate --csv to /dev/full" "$B" simulate --schedule 1f1b -p 4 -m 8 --csv
  one "schedule to /dev/full" "$B" schedule --schedule 1f1b -p 2 -m 4
  one "topology to /dev/full" "$B" topology --mapping 2x2x1
  one "topology --json to /dev/full" "$B" topology --mapping 2x2x1 --json
  one "plan to /dev/full" "$B" plan --model gpt3-175b --gpus 64 --global-batch 512
  one "gemm to /dev/full" "$B" gemm --sizes 64 --min-time 0.001 --elementwise-elements 1000
  one "merge to /dev/full" "$B" merge merged.h5 results.h5
  # the MPI jobs (one rank, no launcher: under mpiexec the launcher forwards stdout and fails first)
  # end as jobs, with every run in the file, and rank 0 then exits 2 (was: exit 1 through MPI_Abort)
  Q=(--tf 100us --tb 200us --tw 100us --warmup 0 --steps 1 --job-warmup 0 --schedule 1f1b -m 4)
  one "run to /dev/full" "$B" run "${Q[@]}" -o run_full.h5
  [ "$(runs run_full.h5)" = 1 ] || fail "run to /dev/full: its run is not in its file"
  one "run --json to /dev/full" "$B" run "${Q[@]}" -o run_full_json.h5 --json
  one "rerun to /dev/full" "$B" rerun run_full.h5 --run 1
  one "comm to /dev/full" "$B" comm -e 1K -n 2 -w 1 --out comm_full.h5
  one "comm --json to /dev/full" "$B" comm -e 1K -n 2 -w 1 --out comm_full_json.h5 --json
  rm -rf merged.h5 run_full.h5 run_full-rerun.h5 run_full_json.h5 comm_full.h5 comm_full_json.h5 said.txt results
  (ulimit -f 8; "$B" report results.h5 --html big.html >out.txt 2>err.txt); rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "cannot write --html 'big.html': File too large" err.txt ||
    fail "report --html past ulimit -f: exit $rc, said: $(cat err.txt)"
  [ -z "$(ls | grep -v -x -e results.h5 -e compare_b.h5 -e out.txt -e err.txt)" ] || fail "left behind: $(ls)"
  # merge --append onto a read-only output, or into a read-only directory: one line, exit 2 (was exit 1
  # with a raw "filesystem error"). Root writes anyway: as root, the merge runs as nobody.
  AS=()
  [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  mkdir ro && cp "$FIX/results.h5" ro/out.h5 && cp "$FIX/odd.h5" ro/odd.h5 && chmod 444 ro/out.h5 && chmod 755 ro
  [ "$(id -u)" = 0 ] && chown -R 65534 ro
  "${AS[@]}" "$B" merge --append ro/out.h5 ro/odd.h5 >out.txt 2>err.txt; rc=$?
  [ $rc -eq 2 ] && [ "$(cat err.txt)" = "pipebench: error: output 'ro/out.h5' is not writable: Permission denied" ] ||
    fail "merge --append onto a read-only file: exit $rc, said: $(cat err.txt)"
  chmod 644 ro/out.h5 && chmod 555 ro
  "${AS[@]}" "$B" merge --append ro/out.h5 ro/odd.h5 >out.txt 2>err.txt; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "^pipebench: error: the directory 'ro' of output 'ro/out.h5' is not writable" err.txt ||
    fail "merge --append in a read-only directory: exit $rc, said: $(cat err.txt)"
  chmod 755 ro && rm -rf ro
  printf '[run]\ninject-failure = "1:1:0:hang"\n' >hook.toml
  "$B" --config hook.toml run >out.txt 2>err.txt; rc=$?
  [ $rc -eq 2 ] && grep -q "key 'inject-failure' is a test hook and only allowed on the command line" err.txt ||
    fail "--inject-failure in a config file: exit $rc, said: $(cat err.txt)"
  echo "ok: failed writes exit 2 with one line, merge --append onto a read-only file or directory too; --inject-failure refused in a config file"
  ;;
append)
  Q=(--tf 100us --tb 200us --tw 100us --warmup 0 --steps 1 --schedule 1f1b -m 4)
  "$MPIEXEC" -n 2 "$B" run "${Q[@]}" -o f.h5 >/dev/null 2>&1 || fail "the first run"
  PIPEBENCH_TEST_READER=spin-run timeout 60 "$MPIEXEC" -n 2 "$B" run "${Q[@]}" --timeout 1s --append -o f.h5 >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 0 ] || fail "a healthy job appending to a file with a slow damaged run: exit $rc: $(cat err.txt)"
  grep -q "^pipebench: warning: run 1 of 'f.h5' is damaged and is left as it is: reading it made no progress for 3 s$" err.txt ||
    fail "warning: $(cat err.txt)"
  n=$("$B" report f.h5 2>/dev/null | sed -n 's/^# pipebench results .*: \([0-9]*\) complete run(s).*/\1/p')
  [ "$n" = 2 ] || fail "f.h5 holds $n complete runs, expected 2"
  echo "ok: a run --append --timeout 1s waited for rank 0's 3 s reading and appended its run"
  ;;
merge)
  Q=(--tf 100us --tb 200us --tw 100us --warmup 0 --steps 1 --schedule 1f1b)
  for m in 2 4 6 8 10 12; do "$MPIEXEC" -n 2 "$B" run "${Q[@]}" -m $m -o "in$m.h5" >/dev/null 2>&1 || fail "run -m $m"; done
  for trial in 1 2 3; do
    rm -f out.h5 && cp in2.h5 out.h5
    pids=()
    for m in 4 6 8 10; do "$B" merge --append out.h5 "in$m.h5" >"merge$m.txt" 2>&1 & pids+=($!); done
    # a sweep appending at the same time, as a merge job of an array may run beside the last task
    "$MPIEXEC" -n 2 "$B" run "${Q[@]}" -m 14,16 --append -o out.h5 >run.txt 2>&1 & pids+=($!)
    for p in "${pids[@]}"; do wait "$p" || fail "trial $trial: a merge or the run failed: $(cat merge*.txt run.txt)"; done
    n=$(runs out.h5)
    [ "$n" = 7 ] || fail "trial $trial: out.h5 holds $n runs, expected 7 (1 + 4 merged + 2 appended)"
    [ -z "$(ls | grep '\.tmp$')" ] || fail "temporary file left: $(ls)"
  done
  echo "ok: 3 trials of 4 concurrent merges and a run --append into one file kept every run"
  ;;
esac
