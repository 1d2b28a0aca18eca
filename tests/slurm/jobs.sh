#!/bin/bash
# Slurm tests (label slurm, issue 12): the batch scripts of jobs/slurm/ submitted with sbatch to a real
# Slurm controller (jobs/slurm/ci-cluster.sh start; jobs/test.sh starts and stops it), waited for with
# a bounded poll. Exit 77 (ctest: skipped) with one line when no cluster answers.
# Usage: jobs.sh PIPEBENCH SOURCE_DIR WORKDIR CASE
#   run      run.sbatch under mpiexec, 4 tasks: the file holds the sweep with the job's metadata
#   sweep    sweep-submit.sh: a 3-task array and the dependent merge, every schedule once in the merge
#   preempt  run.sbatch (srun) signalled mid-sweep like Slurm before a time limit: stops, requeues
#            itself, the requeued job resumes; the file ends with every configuration exactly once
#   refuse   srun --mpi=none -n 2: one-rank MPI worlds in a 2-task step; pipebench refuses (exit 2)
#   comm     comm.sbatch (skipped while `pipebench comm` does not exist)
#   outside  every batch script run outside Slurm says so and exits with 2 (no cluster needed)
set -u
B=$1 SRC=$2 WORK=$3 CASE=$4
J=$SRC/jobs/slurm
CI=$J/ci-cluster.sh
fail() { echo "FAIL (slurm $CASE): $*"; for f in "$WORK"/*.out "$WORK"/*.txt; do [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }; done; exit 1; }
if [ "$CASE" = outside ]; then
  # Run outside Slurm, every batch script says so (one line) and exits with 2; no cluster needed.
  mkdir -p "$WORK" && cd "$WORK" || exit 1
  for s in run.sbatch sweep.sbatch merge.sbatch comm.sbatch; do
    env -u SLURM_JOB_ID -u SLURM_ARRAY_TASK_ID bash "$J/$s" >out.txt 2>err.txt </dev/null
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL (slurm outside): $s exit $rc, expected 2"; exit 1; }
    [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "^${s}: not inside a .*; submit it" err.txt ||
      { echo "FAIL (slurm outside): $s said: $(cat err.txt)"; exit 1; }
  done
  echo "ok: slurm outside"
  exit 0
fi
if [ -z "${SLURM_CONF:-}" ] || ! timeout 10 sinfo -h >/dev/null 2>&1; then
  echo "skipped: no Slurm cluster answers (jobs/slurm/ci-cluster.sh start, then export SLURM_CONF; jobs/test.sh does both)"
  exit 77
fi
# Jobs go only to the test cluster, never to a real one that SLURM_CONF may point at.
if ! grep -q "written by jobs/slurm/ci-cluster.sh" "$SLURM_CONF" 2>/dev/null; then
  echo "skipped: SLURM_CONF ($SLURM_CONF) is not the test cluster of jobs/slurm/ci-cluster.sh"
  exit 77
fi
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export PIPEBENCH=$B
QUICK=(--tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1)
# The jobs' configurations in a file's runs table: "schedule m" per run, sorted.
configs() { "$B" report "$1" | awk '$1 ~ /^[0-9]+$/ {print $2, $7}' | sort; }

case $CASE in
run)
  j=$(PIPEBENCH_LAUNCH=mpiexec sbatch --parsable "$J/run.sbatch" --schedule 1f1b,zbv -m 4 "${QUICK[@]}") || fail "sbatch"
  "$CI" wait -t 60 "$j" >wait.txt || fail "job $j: $(cat wait.txt)"
  f=results/run-$j.h5
  [ "$(configs "$f" | tr '\n' ' ')" = "1f1b 4 zbv 4 " ] || fail "runs in $f: $(configs "$f")"
  "$B" report "$f" >report.txt || fail "report"
  grep -q "^# slurm: run(s) 1-2: job $j, partition debug, nodes $(hostname -s), tasks 4, tasks per node 4, restarts 0$" report.txt ||
    fail "no slurm line for job $j in the report"
  "$B" report "$f" --run 1 | grep -q "^#   slurm_job_id: $j$" || fail "slurm_job_id not in the metadata"
  ;;
sweep)
  read -r a m < <("$J/sweep-submit.sh" "$J/sweep.list" "${QUICK[@]}") || fail "sweep-submit.sh"
  [ -n "$m" ] || fail "no merge job id"
  "$CI" wait -t 90 "$a" "$m" >wait.txt || fail "jobs $a $m: $(cat wait.txt)"
  [ "$(grep -c 'JobState=COMPLETED' wait.txt)" -eq 4 ] || fail "expected 3 array tasks and the merge: $(cat wait.txt)"
  f=results/sweep-$a.h5
  [ "$(configs "$f" | tr '\n' ' ')" = "1f1b 8 interleaved 8 zbv 8 " ] || fail "runs in $f: $(configs "$f")"
  "$B" report "$f" >report.txt || fail "report"
  for t in 0 1 2; do grep -q "^# slurm: run(s) $((t + 1)): job [0-9]* (array ${a}_$t), " report.txt || fail "no slurm line for task $t"; done
  # Merging again into the same output is refused and leaves it as it was.
  sum=$(md5sum <"$f")
  "$B" merge "$f" results/sweep-"${a}"_0.h5 >merge.txt 2>&1 && fail "merge into an existing file accepted"
  "$B" merge --append "$f" results/sweep-"${a}"_0.h5 >merge.txt 2>&1
  [ $? -eq 2 ] && grep -q "duplicates are refused" merge.txt || fail "duplicate not refused: $(cat merge.txt)"
  [ "$(md5sum <"$f")" = "$sum" ] || fail "refused merge changed $f"
  ;;
preempt)
  # Six configurations of about a second each: the signal lands mid-sweep.
  j=$(sbatch --parsable "$J/run.sbatch" --schedule 1f1b -m 4,5,6,7,8,9 --tf 10ms --tb 20ms --tw 10ms --warmup 0 --steps 4) || fail "sbatch"
  log=pipebench-run-$j.out
  for i in $(seq 1 300); do grep -q '^# \[2/6\]' "$log" 2>/dev/null && break; sleep 0.1; done
  grep -q '^# \[2/6\]' "$log" || fail "the sweep did not reach configuration 2 within 30 s"
  # What --signal=B:USR1@N does before the time limit, at a known time.
  scancel --batch --signal=USR1 "$j" || fail "scancel"
  # The requeued job may start once its credential has expired (cred_expire, 10 s after the kill):
  # launched earlier, slurmd refuses it ("Job credential revoked") and the job fails. Its begin time can
  # still come later than that, so once 11 s have passed, say "now" while it waits in the queue (again
  # until it runs: an update made while the requeue is still completing does not hold).
  requeued=
  for i in $(seq 1 240); do
    st=$(scontrol -o show job "$j")
    case $st in
      *Restarts=1*JobState=PENDING* | *JobState=PENDING*Restarts=1*)
        requeued=${requeued:-$SECONDS}
        ((SECONDS - requeued >= 11)) && scontrol update JobId="$j" StartTime=now 2>/dev/null ;;
      *Restarts=1*) grep -q 'JobState=\(RUNNING\|COMPLETED\)' <<<"$st" && break ;;
    esac
    sleep 0.25
  done
  "$CI" wait -t 90 "$j" >wait.txt || fail "job $j: $(cat wait.txt)"
  grep -q "Restarts=1 " wait.txt || fail "the job was not requeued: $(cat wait.txt)"
  grep -q "pipebench: stopped by SIGUSR1" "$log" || fail "no stop message"
  grep -q "requeueing job $j" "$log" || fail "no requeue"
  grep -q "pipebench exited with 75" "$log" || fail "the first start did not exit with 75"
  f=results/run-$j.h5
  [ "$(configs "$f" | tr '\n' ' ')" = "1f1b 4 1f1b 5 1f1b 6 1f1b 7 1f1b 8 1f1b 9 " ] || fail "runs in $f: $(configs "$f")"
  "$B" report "$f" >report.txt || fail "report"
  grep -q "^# slurm: run(s) [0-9-]*: job $j, .*restarts 0$" report.txt || fail "no run of the first start"
  grep -q "^# slurm: run(s) [0-9-]*: job $j, .*restarts 1$" report.txt || fail "no run of the requeued start"
  ;;
refuse)
  srun --mpi=none -n 2 "$B" run --schedule 1f1b -m 4 "${QUICK[@]}" -o refused.h5 >out.txt 2>err.txt
  rc=$?
  [ $rc -eq 2 ] || fail "exit code $rc, expected 2"
  [ "$(grep -c 'pipebench: error: the MPI world has 1 rank, but Slurm started this job step with 2 tasks' err.txt)" -eq 1 ] ||
    fail "expected one refusal line: $(cat err.txt)"
  [ ! -e refused.h5 ] || fail "a results file was made"
  ;;
comm)
  "$B" --help | grep -qE '^  comm ' || { echo "skipped: pipebench comm is not in this build"; exit 77; }
  help=$("$B" comm --help 2>&1)
  for f in --out --append -b -e -n -w; do
    grep -q -- "$f" <<<"$help" || { echo "skipped: pipebench comm has no $f flag, which comm.sbatch passes"; exit 77; }
  done
  j=$(PIPEBENCH_COMM_OPS="all_reduce latency" sbatch --parsable --nodes=1 --ntasks-per-node=2 "$J/comm.sbatch" \
        -b 8 -e 1K -n 2 -w 1) || fail "sbatch"
  "$CI" wait -t 60 "$j" >wait.txt || fail "job $j: $(cat wait.txt)"
  [ -s "results/comm-$j.h5" ] || fail "no results/comm-$j.h5"
  n=$("$B" report "results/comm-$j.h5" | grep -c '^# comm ' || true)
  [ "$n" -ge 2 ] || fail "expected two comm results in results/comm-$j.h5: $("$B" report "results/comm-$j.h5")"
  ;;
*) fail "unknown case" ;;
esac
echo "ok: slurm $CASE"
