#!/bin/bash
# Multi-node tests on emulated nodes (label netns, issue 27): each case starts its own cluster of
# network namespaces with jobs/netns-cluster.sh, runs pipebench across it and stops it (a trap), so
# nothing is left behind. jobs/test.sh runs them after the release suite with PIPEBENCH_TEST_NETNS=1;
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
#   rehearsal  machine A (10gbit) vs B (1gbit): comm, the same sweep, compare, plan --calibrate
#   script     netns-cluster.sh's bad input (one line, exit 2) and a start failing half-way cleans up
set -u
B=$1 SRC=$2 WORK=$3 CASE=$4
C=$SRC/jobs/netns-cluster.sh
fail() { echo "FAIL (netns $CASE): $*"; for f in "$WORK"/*.txt; do [ -f "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }; done; exit 1; }
if [ "${PIPEBENCH_TEST_NETNS:-0}" != 1 ]; then
  echo "skipped: netns tests run from jobs/test.sh (PIPEBENCH_TEST_NETNS=1), alone on the machine"
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
trap '"$C" stop >/dev/null 2>&1' EXIT
QUICK=(--tf 500us --tb 1ms --tw 500us --warmup 0 --steps 1)
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
  up 2 && down
  ;;
placement)
  # 2 nodes x 2 ranks; the order decides which axis stays inside a node (block placement)
  up 2 --inter-node-rate 1gbit
  check_run() {  # check_run MAPPING ORDER EXPECTED-PLACEMENT-TAIL
    "$M" -n "$PIPEBENCH_WORLD" "$B" run --schedule 1f1b -m 4 --mapping "$1" --order "$2" "${QUICK[@]}" -o "run-$1-$2.h5" >run.txt 2>&1 ||
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
*) fail "unknown case $CASE" ;;
esac
echo "ok: netns $CASE"
