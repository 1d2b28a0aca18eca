#!/bin/bash
# Multi-node tests on emulated nodes (label netns, issue 27): each case starts its own cluster of
# network namespaces with jobs/netns-cluster.sh, runs pipebench across it and stops it (a trap), so
# nothing is left behind. jobs/test.sh runs them after the release suite with PIPEBENCH_NETNS_TESTS=1;
# without it, or where namespaces cannot be made, each case is skipped (exit 77) with one line.
# Usage: cluster.sh PIPEBENCH SOURCE_DIR WORKDIR CASE
#   placement  run and topology name the groups that span nodes, for several orders, 2 and 4 nodes
#   comm       pp-pairs sendrecv and a dp all-reduce across nodes are slower than within by the bytes
#              over the shaped rate
#   clock      clock offsets of ranks on other nodes are within their stated uncertainty of the truth
#              (0: the namespaces share the machine's clock), and the uncertainty is not 0
#   bubble     a sweep with stages on both nodes: measured vs simulated bubble within the same sweep's
#              single-host difference + 1 pp
#   nodekill   every rank of node 1 killed mid-sweep: the job ends within --timeout naming the node, the
#              file keeps the finished runs, --append --resume runs exactly the rest
#   partition  node 1's link cut mid-sweep: the job ends naming the unreachable ranks, the same after
#   finalize   every rank waits in MPI_Finalize for one stopped after the sweep: rank 0 says so after
#              --timeout, the others end 2 s later, so the job ends within --timeout + 2 s + teardown
#   rehearsal  machine A (10gbit) vs B (1gbit): comm and the same sweep on both, compare's verdicts
#   rehearsal_plan  plan --calibrate from each rehearsal file predicts its machine's step and B/A
#   slurm      one slurmd per emulated node (jobs/slurm/ci-cluster.sh, PIPEBENCH_SLURM_NETNS): srun -N2
#              of pipebench run names both hosts in its placement and its ranks
#   script     netns-cluster.sh's bad input (one line, exit 2) and a start failing half-way cleans up;
#              a case stopped by SIGTERM or SIGINT, one past its deadline and one SIGKILLed leave nothing
#   hold       (for script) a cluster with ranks that sleep, until a signal or the deadline ends it
# DEADLINE (seconds, 0: none): the case ends itself after it, one line and exit 1, with its cluster
# removed, before ctest's TIMEOUT, whose SIGKILL (CMake 3.25) no trap can see.
# Usage: cluster.sh PIPEBENCH SOURCE_DIR WORKDIR CASE [DEADLINE]
set -u
B=$1 SRC=$2 WORK=$3 CASE=$4 DEADLINE=${5:-0}
C=$SRC/jobs/netns-cluster.sh
fail() { echo "FAIL (netns $CASE): $*"; for f in "$WORK"/*.txt; do [ -f "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }; done; exit 1; }
if [ "${PIPEBENCH_NETNS_TESTS:-0}" != 1 ]; then
  echo "skipped: netns tests run from jobs/test.sh (PIPEBENCH_NETNS_TESTS=1), alone on the machine"
  exit 77
fi
if ! why=$("$C" check 2>&1); then echo "skipped: $why"; exit 77; fi
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export PIPEBENCH_NETNS_DIR=$WORK/cluster
# A cluster for this case: started here, stopped on every exit, and then nothing of it may be left.
up() {
  "$C" start "$@" 2>start.txt || fail "start $*: $(cat start.txt)"
  eval "$("$C" env)"
  M=$PIPEBENCH_NETNS_MPIEXEC
}
down() {
  "$C" stop
  local left
  left=$(ip netns list | grep -c '^pbnode'; ip -o link | grep -c 'pbn')
  [ "$(echo $left)" = "0 0" ] || { echo "FAIL (netns $CASE): stop left namespaces or links: $(ip netns list; ip -o link | grep pbn)"; exit 1; }
}
# Every exit removes the cluster: the end of the case, a failure, SIGTERM or SIGINT (ctest, Slurm, a
# user), and the deadline (SIGALRM from the watchdog below). Long commands run in the background with
# `wait` (mp, bg), so that a signal is handled at once, not after mpiexec returns; the script's own
# children (mpiexec, the watchdog) are ended first, then whatever is left in the namespaces.
WD=
cleanup() {
  trap - EXIT
  [ -n "$WD" ] && { pkill -P "$WD" 2>/dev/null; kill "$WD" 2>/dev/null; }
  local kids k
  kids=$(pgrep -P $$)
  if [ -n "$kids" ]; then
    kill -TERM $kids 2>/dev/null
    # (a child case of `script` removes its own cluster: wait for it, 5 s at most)
    for _ in $(seq 50); do
      for k in $kids; do kill -0 "$k" 2>/dev/null && break; k=; done
      [ -z "$k" ] && break
      sleep 0.1
    done
  fi
  # (the Slurm daemons live outside the namespaces: stopped by their pid files)
  [ -n "${SLURM_DIR:-}" ] && PIPEBENCH_SLURM_DIR=$SLURM_DIR "$SRC/jobs/slurm/ci-cluster.sh" stop >/dev/null 2>&1
  "$C" stop >/dev/null 2>&1
}
trap cleanup EXIT
trap 'echo "netns $CASE: stopped by SIGTERM; the cluster is removed" >&2; exit 143' TERM
trap 'echo "netns $CASE: stopped by SIGINT; the cluster is removed" >&2; exit 130' INT
trap 'fail "did not finish within its deadline of $DEADLINE s (the cluster is removed)"' ALRM
if ((DEADLINE > 0)); then
  { sleep "$DEADLINE" && kill -ALRM $$; } &
  WD=$!
fi
bg() { "$@" & wait $!; }
QUICK=(--tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1 --timeout 10s)
# mpiexec on the cluster. MPICH 4.0.2 over UCX 1.13's TCP leaves about 1 MPI_Finalize in 10 waiting
# for a peer's endpoint close (docs/netns.md); pipebench's finalize watchdog then exits 1 saying that
# every run is in the file. That case alone counts as success here, and is counted (finalize.txt).
mp() {
  local rc=0
  "$M" "$@" 2>mp-err.txt &
  wait $! || rc=$?
  # (exit 1 from rank 0, or 255 from mpiexec when it ended the other ranks first)
  if ((rc != 0)) && grep -q "MPI_Finalize did not complete within --timeout" mp-err.txt &&
    [ "$(grep -c 'pipebench: error' mp-err.txt)" -eq 1 ]; then
    echo "finalize hang: $*" >>finalize.txt; rc=0
  fi
  cat mp-err.txt >&2
  return $rc
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$3"; }

case $CASE in
script)
  for a in "start 0" "start 17" "start two" "start 2 --inter-node-rate fast" "start 2 --inter-node-delay 20" "start 2 --ranks-per-node 0" "start 2 --frob 1" "frob"; do
    # shellcheck disable=SC2086
    "$C" $a >out.txt 2>err.txt; rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q '^netns-cluster: error: ' err.txt || fail "'$a': exit $rc, said: $(cat err.txt)"
  done
  # a start that fails half-way (node 1's veth name is taken) removes what it made, and exits non-zero
  ip link add pbnv1 type bridge || fail "could not plant the clash"
  "$C" start 3 >out.txt 2>err.txt && { ip link del pbnv1; fail "start succeeded over a clash"; }
  ip link del pbnv1
  [ -z "$(ip netns list | grep '^pbnode')" ] && [ -z "$(ip -o link | grep pbn)" ] && [ ! -e /etc/netns/pbnode0 ] &&
    [ ! -e "$PIPEBENCH_NETNS_DIR" ] || fail "a failed start left: $(ip netns list) $(ip -o link | grep pbn) $(ls "$PIPEBENCH_NETNS_DIR" 2>&1)"
  # reshape: the running cluster's links shaped anew (the rehearsal's machines A and B in turns); bad
  # input is one line, exit 2, and leaves the shaping as it was
  "$C" reshape --inter-node-rate 1gbit >out.txt 2>err.txt
  [ $? -eq 2 ] && grep -q '^netns-cluster: error: no cluster is running' err.txt || fail "reshape without a cluster: $(cat err.txt)"
  up 2 --inter-node-rate 1gbit
  rate_of() { ip netns exec "pbnode$1" tc qdisc show dev eth0 | sed -n 's/^qdisc tbf .* rate \([^ ]*\) .*/\1/p'; }
  for a in "reshape --inter-node-rate fast" "reshape --inter-node-delay 20" "reshape --frob 1" "reshape --inter-node-rate"; do
    # shellcheck disable=SC2086
    "$C" $a >out.txt 2>err.txt; rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q '^netns-cluster: error: ' err.txt || fail "'$a': exit $rc, said: $(cat err.txt)"
  done
  [ "$(rate_of 0) $(rate_of 1)" = "1Gbit 1Gbit" ] || fail "a refused reshape changed the links: $(rate_of 0) $(rate_of 1)"
  "$C" reshape --inter-node-rate 10gbit || fail "reshape to 10gbit"
  [ "$(rate_of 0) $(rate_of 1)" = "10Gbit 10Gbit" ] || fail "reshape to 10gbit: the links are at $(rate_of 0) $(rate_of 1)"
  down
  # teardown: a case stopped by SIGTERM or SIGINT, one past its deadline, and one SIGKILLed as ctest's TIMEOUT
  # does (the script and its mpiexec; no trap runs) leave no namespace or link, the last once the
  # next start has removed its stale cluster (its owner, the killed script, is gone)
  nothing_left() { [ -z "$(ip netns list | grep '^pbnode')" ] && [ -z "$(ip -o link | grep pbn)" ]; }
  left() { echo "$(ip netns list | grep '^pbnode' | tr '\n' ' ')$(ip -o link | grep -o 'pbn[a-z0-9]*' | tr '\n' ' ')"; }
  held() {  # held DEADLINE: the hold case in the background, once its ranks sleep on node 1
    # (a background job of a script starts with SIGINT ignored, which no trap can undo: reset it)
    env --default-signal=INT "$0" "$B" "$SRC" "$WORK/hold" hold "$1" >hold.txt 2>&1 &
    H=$!
    for _ in $(seq 150); do [ -n "$(ip netns pids pbnode1 2>/dev/null | head -c1)" ] && return 0; sleep 0.1; done
    fail "the hold case did not start its ranks: $(cat hold.txt)"
  }
  gone_within() {  # gone_within SECONDS: nothing of the cluster left, waiting up to SECONDS
    for _ in $(seq $((10 * $1))); do nothing_left && return 0; sleep 0.1; done
    return 1
  }
  held 0
  kill -TERM $H; wait $H; rc=$?
  gone_within 5 || fail "SIGTERM to a running case (exit $rc) left: $(left)"
  [ $rc -eq 143 ] || fail "SIGTERM: exit $rc, expected 143: $(cat hold.txt)"
  # SIGINT to the script alone (not its process group): it used to wait for mpiexec to return
  held 0
  kill -INT $H; wait $H; rc=$?
  gone_within 5 || fail "SIGINT to a running case (exit $rc) left: $(left)"
  [ $rc -eq 130 ] || fail "SIGINT: exit $rc, expected 130: $(cat hold.txt)"
  held 4
  wait $H; rc=$?
  gone_within 5 || fail "a case past its deadline (exit $rc) left: $(left)"
  [ $rc -eq 1 ] && grep -q "did not finish within its deadline of 4 s" hold.txt || fail "deadline: exit $rc, said: $(cat hold.txt)"
  held 0
  kill -KILL $H $(pgrep -P $H); wait $H 2>/dev/null
  [ -n "$(ip netns list | grep '^pbnode')" ] || fail "SIGKILL: the cluster is already gone (nothing to test)"
  "$C" start 2 >out.txt 2>err.txt || fail "start after a SIGKILLed case: exit $?, said: $(cat err.txt)"
  grep -q "^netns-cluster: removed a stale cluster of 2 node(s) (its owner $H is gone)$" err.txt || fail "start: $(cat err.txt)"
  # a running cluster (its owner, this script, lives) is refused, not removed
  PIPEBENCH_NETNS_DIR=$WORK/other "$C" start 2 >out.txt 2>err.txt && fail "a second start over a live cluster succeeded"
  grep -q "^netns-cluster: error: a cluster of this script is running (owner $$, " err.txt || fail "second start: $(cat err.txt)"
  down
  ;;
hold)
  up 2
  mp -n 4 sleep 600
  ;;
placement)
  # 2 nodes x 2 ranks; the order decides which axis stays inside a node (block placement)
  up 2 --inter-node-rate 1gbit
  check_run() {  # check_run MAPPING ORDER EXPECTED-PLACEMENT-TAIL
    mp -n "$PIPEBENCH_WORLD" "$B" run --schedule 1f1b -m 4 --mapping "$1" --order "$2" "${QUICK[@]}" -o "run-$1-$2.h5" >run.txt 2>&1 ||
      fail "run $1 $2: exit $?"
    grep -q "^#   placement $1: $3\(; warning: .*\)\{0,1\}$" run.txt || fail "run $1 $2: placement line: $(grep placement run.txt)"
    # topology, given the hosts the run stored, says the same of every group kind
    "$B" report "run-$1-$2.h5" --run 1 --json | python3 -c "import json,sys; [print(r['host']) for r in json.load(sys.stdin)['ranks']]" >hosts.txt
    "$B" topology --mapping "$1" --order "$2" --hostfile hosts.txt --json >topo.json || fail "topology --hostfile"
    for k in tp pp dp; do
      want=$(sed -n "s/.*$k groups spanning nodes \([0-9]*\/[0-9]*\).*/\1/p" <<<"$3")
      got=$(json topo.json "p=d['placement']['$k']; print('%d/%d' % (p['spanning_nodes'], p['groups']))" topo.json)
      [ "$want" = "$got" ] || fail "topology $1 $2: $k spanning $got, run said $want"
    done
  }
  PIPEBENCH_WORLD=4
  check_run 1x2x2 tp-dp-pp "2 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 2/2, dp groups spanning nodes 0/2, pipeline links across nodes 2/2"
  check_run 1x2x2 tp-pp-dp "2 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 0/2, dp groups spanning nodes 2/2, pipeline links across nodes 0/2"
  check_run 2x2x1 tp-dp-pp "2 node(s); tp groups spanning nodes 0/2, pp groups spanning nodes 2/2, dp groups spanning nodes 0/4, pipeline links across nodes 2/2"
  check_run 2x2x1 pp-tp-dp "2 node(s); tp groups spanning nodes 2/2, pp groups spanning nodes 0/2, dp groups spanning nodes 0/4, pipeline links across nodes 0/2"
  grep -q "warning: 2 of 2 tp groups span more than one node" run.txt || fail "no warning for tp groups across nodes"
  down
  # 4 nodes x 2 ranks, 2x2x2
  up 4 --inter-node-rate 1gbit
  PIPEBENCH_WORLD=8
  check_run 2x2x2 tp-dp-pp "4 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 4/4, dp groups spanning nodes 4/4, pipeline links across nodes 4/4"
  check_run 2x2x2 dp-pp-tp "4 node(s); tp groups spanning nodes 4/4, pp groups spanning nodes 4/4, dp groups spanning nodes 0/4, pipeline links across nodes 4/4"
  down
  ;;
comm)
  # 2 nodes at 200 Mbit/s: 1 MiB between two ranks, on one node and across (--one-group: one pair
  # or group on the link); across must take longer by at least 0.9 x the bytes over the rate and at
  # most 3 x (TCP/IP and Ethernet headers add 4.6 % at MTU 1500; UCX's TCP moves data only when the
  # waiting rank polls, which on a 2-core machine at load 10 cost up to 2.3 x)
  up 2 --inter-node-rate 200mbit
  t_of() {  # t_of OP GROUP ORDER: median time in us
    mp -n 4 "$B" comm "$1" --group "$2" --mapping 1x2x2 --order "$3" --one-group -b 1M -e 1M -n 5 -w 2 --poll-us 50 \
      --timeout 10s --out "comm-$1-$3.h5" --json 2>/dev/null >c.json || fail "comm $1 $2 $3"
    json c.json "print(d[0]['time_us'])" c.json
  }
  wire=$(python3 -c "print(1048576 * 8 / 200e6 * 1e6)")
  for g in "sendrecv pp-pairs tp-pp-dp tp-dp-pp" "all_reduce dp tp-dp-pp tp-pp-dp"; do
    read -r op grp within across <<<"$g"
    a=$(t_of "$op" "$grp" "$within") b=$(t_of "$op" "$grp" "$across")
    echo "$op $grp: within $a us, across $b us, wire $wire us" | tee -a figures.txt
    python3 -c "import sys; a,b,w=map(float,sys.argv[1:]); x=(b-a)/w; print('ratio', x); sys.exit(0 if 0.9 <= x <= 3.0 else 1)" "$a" "$b" "$wire" ||
      fail "$op $grp: across - within = $b - $a us, expected about $wire us"
  done
  down
  ;;
clock)
  # The namespaces share the machine's clock, so every true offset is 0: each estimate of a rank on
  # another node must be within its stated uncertainty of 0, and that uncertainty must not be 0
  up 2 --inter-node-rate 1gbit
  mp -n 4 "$B" run --schedule 1f1b,gpipe -m 4 --mapping 1x4x1,1x2x2 "${QUICK[@]}" --json -o clock.h5 >clock.json || fail "run"
  json clock.json "
bad = []
for r in d:
  h0 = r['ranks'][0]['host']
  for x in r['ranks']:
    o, u = x['clock_offset'], x['clock_uncertainty']
    if x['host'] == h0: ok = o == 0 and u == 0
    else: ok = 0 < u < 1e-3 and abs(o) <= u
    if not ok: bad.append((r['id'], x['global_rank'], x['host'], o, u))
  print('run', r['id'], ['%s %.2g+-%.2g' % (x['host'], x['clock_offset'], x['clock_uncertainty']) for x in r['ranks']])
sys.exit('offsets outside their uncertainty: %s' % bad if bad else 0)" clock.json | tee -a figures.txt || fail "clock offsets"
  down
  ;;
bubble)
  # Stages 0-1 on node 0, 2-3 on node 1 (1x4x1: one pipeline link crosses). The same sweep on one
  # host (plain mpiexec) gives the single-host difference; across nodes it must stay within it + 1 pp
  S=(--schedule gpipe,1f1b,zb-h1,interleaved -m 8 --mapping 1x4x1 --tf 2ms --tb 4ms --tw 2ms --p2p-bytes 64KiB --warmup 1 --steps 3 --timeout 10s --json)
  worst() { json "$1" "print(max(abs(r['summary']['bubble_measured'] - r['summary']['bubble_simulated']) * 100 for r in d))" "$1"; }
  bg mpiexec -n 4 "$B" run "${S[@]}" -o one.h5 >one.json 2>/dev/null || fail "single-host run"
  up 2 --inter-node-rate 1gbit
  mp -n 4 "$B" run "${S[@]}" -o two.h5 >two.json || fail "run across nodes"
  a=$(worst one.json) b=$(worst two.json)
  echo "worst |measured - simulated| bubble: one host $a pp, two nodes $b pp" | tee -a figures.txt
  python3 -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if b <= max(a, 1.9) + 1 else 1)" "$a" "$b" ||
    fail "across nodes the simulator misses the bubble by $b pp, one host by $a pp"
  down
  ;;
nodekill | partition)
  # A 6-configuration sweep; once 2 runs are written, node 1 goes: its ranks SIGKILLed (nodekill), its
  # ranks and proxy frozen (SIGSTOP: a hung node), or its link cut (partition). The job must end
  # within --timeout (T) of the fault, plus rank 0's roll call (T/2) and the launcher's teardown,
  # naming node 1 (or its ranks), with every finished run in the file; --append --resume then runs
  # exactly the rest.
  T=4
  up 2 --inter-node-rate 1gbit
  SW=(--schedule 1f1b -m 4,6,8,10,12,14 --tf 4ms --tb 8ms --tw 4ms --warmup 0 --steps 3 --timeout ${T}s)
  faults=(kill freeze)
  [ "$CASE" = partition ] && faults=(cut)
  for f in "${faults[@]}"; do
    rm -f "r-$f.h5"
    "$M" -n 4 "$B" run "${SW[@]}" -o "r-$f.h5" >"out-$f.txt" 2>"err-$f.txt" &
    job=$!
    for _ in $(seq 300); do grep -q '^# \[3/6\]' "err-$f.txt" && break; sleep 0.05; done
    grep -q '^# \[3/6\]' "err-$f.txt" || fail "$f: the sweep did not reach configuration 3"
    t0=$(date +%s.%N)
    ranks=$(for p in $(ip netns pids pbnode1); do [ "$(cat /proc/$p/comm 2>/dev/null)" = pipebench ] && echo "$p"; done)
    case $f in
      kill) kill -KILL $ranks ;;
      freeze) kill -STOP $(ip netns pids pbnode1) ;;
      cut) "$C" partition 1 ;;
    esac
    # the job must end by itself; after 4 T it is a failure (then healed and killed, to clean up)
    for _ in $(seq $((40 * T))); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
    t1=$(date +%s.%N)
    if kill -0 $job 2>/dev/null; then
      "$C" heal 1; kill -CONT $(ip netns pids pbnode1) 2>/dev/null; kill $job; fail "$f: the job did not end within $((4 * T)) s of the fault"
    fi
    wait $job; rc=$?
    [ "$f" = cut ] && "$C" heal 1
    dt=$(python3 -c "print('%.2f' % ($t1 - $t0))")
    [ $rc -ne 0 ] || fail "$f: exit 0"
    case $f in
      kill) grep -q "RUNNING AT pbnode1" "err-$f.txt" "out-$f.txt" || fail "kill: the launcher did not name pbnode1" ;;
      *) [ "$(grep -c 'pipebench: error:' "err-$f.txt")" -eq 1 ] || fail "$f: not one error line"
         grep -Eq "pipebench: error: .*ranks? ([0-9]+ \(host [^)]*\), )*[23] \(host pbnode1\)" "err-$f.txt" || fail "$f: no line naming rank 2 or 3 on pbnode1" ;;
    esac
    done_runs=$(grep -cE '^ +[0-9]+  1f1b ' "out-$f.txt")
    echo "$f: node 1 gone after $done_runs run(s), job ended ${dt} s later (exit $rc): $(grep -m1 -E 'pipebench: error|RUNNING AT' "err-$f.txt" "out-$f.txt")" | tee -a figures.txt
    "$B" report "r-$f.h5" >report.txt 2>&1 || fail "$f: report: $(cat report.txt)"
    grep -q "^# .*$done_runs complete run(s)" report.txt || fail "$f: $done_runs rows printed, the file says: $(grep 'complete run' report.txt)"
    mp -n 4 "$B" run "${SW[@]}" -o "r-$f.h5" --append --resume >"resume-$f.txt" || fail "$f: resume"
    [ "$(grep -c 'already in .*, skipped (--resume)' mp-err.txt)" -eq "$done_runs" ] || fail "$f: resume did not skip exactly $done_runs"
    [ "$(grep -cE '^ +[0-9]+  1f1b ' "resume-$f.txt")" -eq $((6 - done_runs)) ] || fail "$f: resume did not run exactly $((6 - done_runs))"
    "$B" report "r-$f.h5" | grep -q "6 complete run(s)" || fail "$f: not 6 runs after resume"
  done
  down
  ;;
finalize)
  # MPICH 4.0.2 over UCX's TCP deadlocks now and then in MPI_Finalize (docs/netns.md): every rank
  # waits there. The test hook stops rank 3 (node 1) after the last meeting, which holds every rank
  # in MPI_Finalize the same way. Across nodes the launcher does not end the others when rank 0
  # exits, so each ends by its own watchdog: rank 0's after T with one line, the others' 2 s later
  # (they waited the 3 T of a meeting before: 19.0 s at T = 6, against 9.2 s now)
  T=6
  up 2 --inter-node-rate 1gbit
  t0=$(date +%s.%N)
  PIPEBENCH_TEST_FAULT=3:0:end "$M" -n 4 "$B" run --schedule 1f1b -m 4,6 --tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1 \
    --timeout ${T}s -o fin.h5 >out.txt 2>err.txt &
  wait $!; rc=$?
  dt=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $t0))")
  echo "a rank stopped after the sweep: the job ended after $dt s at --timeout $T s (exit $rc)" | tee -a figures.txt
  [ $rc -ne 0 ] || fail "exit 0"
  [ "$(grep -c 'pipebench: error:' err.txt)" -eq 1 ] &&
    grep -q "^pipebench: error: rank 0: MPI_Finalize did not complete within --timeout $T s, though every rank reached the end of the sweep" err.txt ||
    fail "not one line from rank 0: $(grep -v '^#' err.txt)"
  # (the sweep takes a second; 4 s more for the launch and the teardown under load)
  python3 -c "import sys; sys.exit(0 if $dt <= $T + 2 + 5 else 1)" || fail "the job ended $dt s after its start, expected about $T + 2 s"
  "$B" report fin.h5 | grep -q "2 complete run(s)" || fail "the file does not hold both runs"
  down
  ;;
rehearsal)
  # A procurement rehearsal (docs/netns.md): machine A's inter-node links at 10 Gbit/s, B's at
  # 1 Gbit/s (this kernel has no netem, so the 20 us and 100 us latencies are not set). On each:
  # comm, then the same sweep (synthetic stages with real p2p and DP bytes, four placements, and one
  # transformer layout for the calibration); then compare A B and plan --calibrate from each file.
  # The transformer runs 1x2x1 on one rank per node (-ppn 1): its stages compute, and 4 ranks on
  # this host's 2 cores made every action and message wait for a core (B/A's 95 % interval 26 points
  # wide over the 5 repeats, against the plan check's 5).
  # The two machines are one cluster reshaped in turns, and the sweep runs as R rounds, one repeat of
  # each machine per round (A then B, then B then A, ...), so that both meet the same moments of load;
  # each machine's rounds become one file of R repeats per configuration (merge --as-repeats), which
  # compare takes as its samples.
  R=5
  SYN=(--schedule 1f1b -m 8 --tf 2ms --tb 4ms --tw 2ms --p2p-bytes 1MiB --dp-grad-bytes 8MiB --warmup 1 --steps 3 --timeout 10s)
  TF=(--workload transformer --schedule 1f1b -m 8 --mapping 1x2x1 --layers 8 --hidden 256 --heads 8 --seq 128 --vocab 1024 --warmup 1 --steps 3 --timeout 10s)
  declare -A RATE_OF=([A]=10gbit [B]=1gbit)
  up 2 --inter-node-rate 10gbit
  as() { "$C" reshape --inter-node-rate "${RATE_OF[$1]}" || fail "reshape to machine $1"; }
  for m in A B; do
    as $m
    mp -n 4 "$B" comm sendrecv --group pp-pairs --mapping 1x2x2 --order tp-dp-pp --one-group -b 64K -e 4M -n 5 -w 2 \
      --poll-us 50 --timeout 20s --out "comm-$m.h5" >"comm-$m.txt" || fail "$m: comm"
  done
  for ((k = 1; k <= R; k++)); do
    turn="A B"
    ((k % 2 == 0)) && turn="B A"
    for m in $turn; do
      as $m
      f=$m-$k.h5
      echo "# round $k, machine $m ($(uptime | sed 's/.*load/load/'))" >>"run-$m.txt"
      mp -n 4 "$B" run "${SYN[@]}" --mapping 1x4x1,1x2x2 --order tp-dp-pp -o "$f" >>"run-$m.txt" || fail "$m round $k: run 1x4x1, pp across"
      mp -n 4 "$B" run "${SYN[@]}" --mapping 1x2x2 --order tp-pp-dp --append -o "$f" >>"run-$m.txt" || fail "$m round $k: run dp across"
      mp -n 4 "$B" run "${SYN[@]}" --mapping 1x2x2 --order tp-pp-dp --dp-grad-bytes 0 --append -o "$f" >>"run-$m.txt" || fail "$m round $k: run inside"
      mp -n 2 -ppn 1 "$B" run "${TF[@]}" --append -o "$f" >>"run-$m.txt" || fail "$m round $k: transformer run"
    done
  done
  down
  for m in A B; do
    "$B" merge --as-repeats "$m.h5" "comm-$m.h5" $(for ((k = 1; k <= R; k++)); do echo "$m-$k.h5"; done) >"merge-$m.txt" ||
      fail "merge --as-repeats $m: $(cat "merge-$m.txt")"
  done
  "$B" compare A.h5 B.h5 | tee compare.txt >>figures.txt || fail "compare"
  "$B" compare A.h5 B.h5 --json >compare.json || fail "compare --json"
  # the pipeline- and DP-heavy synthetic configurations significantly slower on B, the one without
  # inter-node traffic not (matched in the order of the sweep: runs 1-4 synthetic, 5 transformer)
  json compare.json "
m = {x['run_a']: x for x in d['matches']}
v = [(i, m[i]['step_time']['ratio'], m[i]['significant']) for i in (1, 2, 3, 4)]
print('B/A and verdict per configuration:', v)
ok = all(r > 1 and s for i, r, s in v[:3]) and not v[3][2]
sys.exit(0 if ok else 'compare: ' + str(v))" compare.json >verdicts.txt; rc=$?
  cat verdicts.txt >>figures.txt
  ((rc == 0)) || fail "compare verdicts: $(cat verdicts.txt)"
  ;;
rehearsal_plan)
  # plan --calibrate from each machine's own file of the rehearsal (netns.rehearsal, run before this
  # one), the transformer layout evaluated: within 15 % of that machine's measured step, B/A within
  # 5 points of the measured ratio
  cd "$WORK/../rehearsal" && [ -f A.h5 ] && [ -f B.h5 ] || fail "the rehearsal's files are missing (run netns.rehearsal first)"
  for m in A B; do
    "$B" plan --calibrate "$m.h5" --layers 8 --hidden 256 --heads 8 --seq 128 --vocab 1024 --global-batch 8 \
      --mapping 1x2x1 --schedule 1f1b --micro-batch-size 1 --recompute none --zero 0 --no-sequence-parallel \
      --gpus-per-node 1 --evaluate --json >"plan-$m.json" 2>"plan-$m.err" || fail "plan --calibrate $m.h5: $(cat "plan-$m.err")"
    "$B" report "$m.h5" --run 5 --json >"tf-$m.json" || fail "report $m.h5 run 5"
  done
  # (the measured B/A's 95 % interval from compare, over the 5 repeats each: how far the measurement
  # itself can place the ratio, printed with the figures; the bounds are the issue's)
  python3 - plan-A.json plan-B.json tf-A.json tf-B.json compare.json >predictions.txt <<'PY'
import json, sys
pa, pb, ma, mb, c = (json.load(open(f)) for f in sys.argv[1:])
pa, pb = pa['configurations'][0]['step_time'], pb['configurations'][0]['step_time']
ma, mb = ma['summary']['step_time'], mb['summary']['step_time']
ci = {x['run_a']: x['step_time'] for x in c['matches']}.get(5, {})
ci = '%.3f-%.3f' % (ci['ci_low'], ci['ci_high']) if ci.get('ci_low') is not None else 'unknown'
print('plan --calibrate: A predicted %.1f ms measured %.1f ms (%+.1f %%); B predicted %.1f ms measured %.1f ms (%+.1f %%); B/A predicted %.3f measured %.3f (95 %% CI %s)'
      % (pa * 1e3, ma * 1e3, (pa / ma - 1) * 100, pb * 1e3, mb * 1e3, (pb / mb - 1) * 100, pb / pa, mb / ma, ci))
ok = abs(pa / ma - 1) <= 0.15 and abs(pb / mb - 1) <= 0.15 and abs(pb / pa - mb / ma) <= 0.05
sys.exit(0 if ok else 1)
PY
  rc=$?
  cat predictions.txt | tee -a figures.txt
  ((rc == 0)) || fail "plan --calibrate: a prediction is more than 15 % off, or B/A more than 5 points: $(cat predictions.txt)"
  ;;
slurm)
  # Debian's Slurm with one slurmd per node (docs/netns.md "Slurm per namespace"): slurmctld on the
  # bridge's address, each slurmd in its node's namespaces at the node's address; srun --mpi=pmi2
  # starts the ranks there, and MPICH counts srun's nodes as nodes (PMI's process mapping)
  command -v srun >/dev/null && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/slurmctld ] ||
    { echo "skipped: Debian's Slurm is not installed (slurmd, slurmctld, slurm-client: jobs/slurm/ci-cluster.sh start installs them)"; exit 77; }
  up 2 --inter-node-rate 1gbit
  SLURM_DIR=$WORK/slurm
  export PIPEBENCH_SLURM_DIR=$SLURM_DIR PIPEBENCH_SLURM_PORT=6917 PIPEBENCH_SLURM_CTLD_ADDR=10.213.0.254 \
    PIPEBENCH_SLURM_NETNS="pbnode0=10.213.0.1 pbnode1=10.213.0.2" PIPEBENCH_SLURM_CPUS=4
  bg "$SRC/jobs/slurm/ci-cluster.sh" start 2>slurm-start.txt || fail "ci-cluster.sh start: $(cat slurm-start.txt)"
  eval "$("$SRC/jobs/slurm/ci-cluster.sh" env)"
  srun -N2 --ntasks-per-node=2 sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME $(hostname)"' >tasks.txt 2>&1 || fail "srun: $(cat tasks.txt)"
  [ "$(sort tasks.txt | tr '\n' ' ')" = "0 pbnode0 pbnode0 1 pbnode0 pbnode0 2 pbnode1 pbnode1 3 pbnode1 pbnode1 " ] ||
    fail "srun -N2: tasks not 2 per node with the nodes' host names: $(cat tasks.txt)"
  # UCX as the cluster's mpiexec sets it: TCP over eth0 between nodes, shared memory within one
  rc=0
  srun -N2 --ntasks-per-node=2 --mpi=pmi2 --export=ALL,UCX_TLS=tcp,self,sysv,posix,UCX_NET_DEVICES=eth0 \
    "$B" run --schedule 1f1b -m 4 --mapping 1x4x1 "${QUICK[@]}" -o slurm.h5 >run.txt 2>run-err.txt & wait $! || rc=$?
  # (MPI_Finalize's hang, docs/netns.md, ends the job with rank 0's one line; the run is in the file)
  ((rc == 0)) || grep -q "MPI_Finalize did not complete within --timeout" run-err.txt || fail "srun run: exit $rc: $(cat run-err.txt)"
  ((rc == 0)) || echo "finalize hang: srun run" >>finalize.txt
  grep -q "^#   placement 1x4x1: 2 node(s); .*pipeline links across nodes 1/3" run.txt || fail "placement: $(grep placement run.txt)"
  "$B" report slurm.h5 --run 1 --json >r.json || fail "report"
  hosts=$(json r.json "print(' '.join(r['host'] for r in d['ranks']))" r.json)
  echo "srun -N2: ranks on $hosts; $(grep placement run.txt)" | tee -a figures.txt
  [ "$hosts" = "pbnode0 pbnode0 pbnode1 pbnode1" ] || fail "the ranks' hosts: $hosts"
  "$SRC/jobs/slurm/ci-cluster.sh" stop
  SLURM_DIR=
  down
  ;;
*) fail "unknown case $CASE" ;;
esac
echo "ok: netns $CASE"
