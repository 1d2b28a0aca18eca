#!/bin/bash
# Issue 26: what a run records of where its ranks ran, and the job warm-up.
#   affinity   each rank's CPU affinity and OpenMP threads are in the metadata (cpu_affinity); a sweep
#              under `taskset -c 0` is not like for like with one on every CPU: compare names the
#              difference and exits 2, and compares with --allow-different
#   warmup     --job-warmup N runs N + 1 untimed steps of the first configuration before its repeats,
#              says so once, records job_warmup_steps (and their wall time for the first
#              configuration, job_warmup_seconds), and stores only the timed runs; 0: none
# Usage: like_for_like.sh PIPEBENCH MPIEXEC WORKDIR CASE. Exit 77 (skipped) with fewer than 2 CPUs.
set -u
B=$1 MPIEXEC=$2 WORK=$3 CASE=$4
fail() { echo "FAIL ($CASE): $*"; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
quick=(run --steps 1 --warmup 0 -m 2 --schedule 1f1b,gpipe)
meta() { "$B" report "$1" --json --run "$2" | python3 -c "import json,sys; print(json.load(sys.stdin)['metadata'].get('$3', ''))"; }
case $CASE in
affinity)
  [ "$(nproc)" -ge 2 ] || { echo "fewer than 2 CPUs: nothing to restrict"; exit 77; }
  "$MPIEXEC" -n 2 "$B" "${quick[@]}" -o all.h5 >/dev/null 2>&1 || fail "run on every CPU"
  "$MPIEXEC" -n 2 taskset -c 0 "$B" "${quick[@]}" -o one.h5 >/dev/null 2>&1 || fail "run under taskset"
  [ "$(meta one.h5 1 cpu_affinity)" = "every rank: cpus 0 (1), omp 1" ] || fail "taskset run records '$(meta one.h5 1 cpu_affinity)'"
  all=$(meta all.h5 1 cpu_affinity)
  [[ $all == "every rank: cpus "*" ($(nproc)), omp "* ]] || fail "full run records '$all'"
  "$B" compare all.h5 one.h5 >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] || fail "compare: exit $rc, $(cat err.txt)"
  grep -qF "CPU affinity ($all | every rank: cpus 0 (1), omp 1)" err.txt || fail "compare does not name the affinity: $(cat err.txt)"
  "$B" compare all.h5 one.h5 --allow-different >out.txt 2>&1 || fail "--allow-different: $(cat out.txt)"
  grep -qF "#   CPU affinity: $all  |  every rank: cpus 0 (1), omp 1" out.txt || fail "the like-for-like section: $(head -5 out.txt)"
  ;;
warmup)
  "$MPIEXEC" -n 2 "$B" "${quick[@]}" --job-warmup 2 -o w.h5 >out.txt 2>err.txt || fail "run: $(cat err.txt)"
  [ "$(grep -c '^# job warm-up' err.txt)" -eq 1 ] || fail "warm-up lines: $(cat err.txt)"
  grep -qF "# job warm-up: 2 + 1 untimed steps of configuration 1 (--job-warmup)" err.txt || fail "$(cat err.txt)"
  "$B" report w.h5 | grep -q "2 complete run(s)" || fail "the file: $("$B" report w.h5 | head -3)"
  [ "$(meta w.h5 2 job_warmup_steps)" = 2 ] || fail "job_warmup_steps $(meta w.h5 2 job_warmup_steps)"
  # 3 steps of 1F1B, p = 2, m = 2 take at least 3 x (m + p - 1) x (tf + tb) = 3 x 3 x 6 ms of sleeps.
  secs=$(meta w.h5 1 job_warmup_seconds)
  python3 -c "import sys; sys.exit(0 if float('${secs:-0}') >= 0.054 else 1)" || fail "job_warmup_seconds '$secs'"
  [ -z "$(meta w.h5 2 job_warmup_seconds)" ] || fail "configuration 2 was warmed up too"
  [ "$("$B" report w.h5 --json --run 1 | python3 -c "import json,sys; print(len(json.load(sys.stdin)['steps']))")" = 1 ] ||
    fail "configuration 1 keeps more than its one timed step"
  "$MPIEXEC" -n 2 "$B" "${quick[@]}" --job-warmup 0 -o n.h5 >/dev/null 2>err.txt || fail "run: $(cat err.txt)"
  ! grep -q "job warm-up" err.txt || fail "--job-warmup 0 warmed up"
  ;;
*) fail "unknown case" ;;
esac
echo "like_for_like $CASE: ok"
