#!/usr/bin/env bash
# netns-cluster.sh: emulated nodes on one machine, for testing multi-node behaviour without a cluster
# (issue 27, docs/netns.md). Each node is a network namespace with its own address on a bridge made for
# it and, for every process the launcher starts there, its own UTS namespace holding the node's host
# name. MPICH's hydra starts one proxy per node through the launcher wrapper below (ssh's place), so
# the ranks of one node share memory and ranks of different nodes talk TCP over the bridge; the
# inter-node links are shaped with tc netem (rate and delay on each node's egress).
#
#   netns-cluster.sh start N [--inter-node-rate R] [--inter-node-delay D] [--ranks-per-node K]
#       N (1 to 16) nodes pbnode0 .. pbnode<N-1>; R as tc writes it (10gbit, 1gbit, 500mbit),
#       D as tc writes it (20us, 100us, 1ms); K (default 2) slots per node for mpiexec.
#       A start that fails half-way removes what it made; a second start is refused (stop first)
#       while the cluster's owner lives (PIPEBENCH_NETNS_OWNER, default the caller: start's parent
#       process); a cluster whose owner is gone (a test killed by ctest's TIMEOUT, kill -9) is stale
#       and start removes it first, by its own names (the bridge's alias says it made it).
#   netns-cluster.sh stop     remove exactly what start made (listed in the state file), kill the
#                             processes left in the namespaces
#   netns-cluster.sh env      print the exports: PIPEBENCH_NETNS_MPIEXEC (mpiexec with the cluster's
#                             launcher, hosts and transports), PIPEBENCH_NETNS_NODES, _RANKS_PER_NODE
#   netns-cluster.sh reshape [--inter-node-rate R] [--inter-node-delay D]
#                             the running cluster's links shaped anew (the rest as it was): one set of
#                             nodes as machine A, then as machine B, in turns
#   netns-cluster.sh partition I | heal I
#                             drop every packet on node I's link (both ways) | restore its shaping
#   netns-cluster.sh launch [ssh options] HOST COMMAND...   (hydra's -launcher-exec calls this)
#   netns-cluster.sh check    exit 0 where namespaces can be made (root, ip, tc), else one line, exit 2
#
# Environment: PIPEBENCH_NETNS_DIR (default /run/pipebench-netns) holds the state file and the two
# wrappers. Only the emulated nodes' addresses (10.213.0.0/24) are ever used.
set -Eeuo pipefail

DIR=${PIPEBENCH_NETNS_DIR:-/run/pipebench-netns}
STATE=$DIR/state
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
BRIDGE=pbnbr0
NET=10.213.0
HOSTADDR=$NET.254

die() { echo "netns-cluster: error: $*" >&2; exit 2; }
node() { echo "pbnode$1"; }

can_make() {
  [[ $(id -u) -eq 0 ]] || { echo "not root: network namespaces need root (or CAP_SYS_ADMIN and CAP_NET_ADMIN)"; return 1; }
  command -v ip >/dev/null && command -v tc >/dev/null && command -v unshare >/dev/null ||
    { echo "ip, tc or unshare missing (Debian: iproute2, util-linux)"; return 1; }
  ip netns add pbnode-probe 2>/dev/null || { echo "ip netns add fails here (no namespaces in this container?)"; return 1; }
  ip netns del pbnode-probe
}

# One record per thing made, in the order made: stop undoes them in reverse.
made() { echo "$*" >>"$STATE"; }

undo() {
  local kind name pid
  [[ -f $STATE ]] || return 0
  while read -r kind name; do
    case $kind in
      netns)
        for pid in $(ip netns pids "$name" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
        for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -z $(ip netns pids "$name" 2>/dev/null) ]] && break; sleep 0.1; done
        ip netns del "$name" 2>/dev/null || true ;;
      link) ip link del "$name" 2>/dev/null || true ;;
      file) rm -f "$name" ;;
      dir) rmdir "$name" 2>/dev/null || true ;;
      conf) ;;
    esac
  done < <(tac "$STATE")
  rm -f "$STATE"
}

# rate in bits/s of a tc rate (10gbit, 500mbit, 125mbps)
bits() {
  awk -v r="$1" 'BEGIN { m = 1; if (r ~ /bps$/) m = 8; sub(/(bit|bps)$/, "", r)
    u = substr(r, length(r)); if (u == "k") m *= 1e3; else if (u == "m") m *= 1e6; else if (u == "g") m *= 1e9
    sub(/[kmg]$/, "", r); printf "%.0f", r * m }'
}

shape() {  # shape NODE: the node's egress as start set it: tbf for the rate, netem under it for the delay
  local ns=$1 burst parent=root
  ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null || true
  if [[ -n ${RATE:-} ]]; then
    # burst: 50 us at the rate, at least 16 KiB (tbf cuts GSO packets larger than its burst)
    burst=$(awk -v b="$(bits "$RATE")" 'BEGIN { x = b * 50e-6 / 8; if (x < 16384) x = 16384; printf "%.0f", x }')
    ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: tbf rate "$RATE" burst "$burst" latency 200ms
    parent="parent 1:1"
  fi
  # shellcheck disable=SC2086
  [[ -z ${DELAY:-} ]] || ip netns exec "$ns" tc qdisc add dev eth0 $parent handle 10: netem delay "$DELAY" limit 100000
}

has_netem() {  # the kernel's sch_netem, which a delay needs (a probe namespace's loopback)
  local ok=0
  ip netns add pbnode-probe 2>/dev/null || return 1
  ip netns exec pbnode-probe tc qdisc add dev lo root netem delay 1ms 2>/dev/null || ok=1
  ip netns del pbnode-probe
  return $ok
}

conf() { sed -n "s/^conf $1=//p" "$STATE"; }

# A process as PID:START (its start time in clock ticks since boot, /proc/PID/stat field 22), so that
# a reused PID is not taken for the owner; empty when there is no such process.
proc_id() {
  local rest
  rest=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 0  # the fields after "PID (COMM) "
  [[ -n $rest ]] || return 0
  # shellcheck disable=SC2086
  set -- "$1" $rest
  echo "$1:${21}"
}
# The process start is for: PIPEBENCH_NETNS_OWNER, else the caller, above any sudo, su, env, nice or
# timeout that ran this script (a terminal's `sudo netns-cluster.sh start 2` is owned by its shell).
owner_pid() {
  local p=${PIPEBENCH_NETNS_OWNER:-$PPID}
  [[ -n ${PIPEBENCH_NETNS_OWNER:-} ]] && { echo "$p"; return; }
  while [[ $(cat "/proc/$p/comm" 2>/dev/null) =~ ^(sudo|su|doas|env|nice|timeout|setpriv)$ ]]; do
    p=$(sed 's/^.*) //' "/proc/$p/stat" | cut -d' ' -f2)
  done
  echo "$p"
}
alive() { [[ -n $1 && $(proc_id "${1%%:*}") == "$1" ]]; }

# The bridge's alias marks a cluster of this script: "pipebench-netns nodes=N owner=PID:START state=PATH".
marker() { cat "/sys/class/net/$BRIDGE/ifalias" 2>/dev/null || true; }

# Removes a cluster whose owner is gone, by the names it made: its state file's list where that file
# is still there (a test's work directory may have been removed), else pbnode0..N-1, pbnv0..N-1,
# /etc/netns/pbnode<i> and the bridge. A cluster whose owner lives is left alone (start then refuses).
reap_stale() {
  local m n owner state i ns pid
  m=$(marker)
  [[ $m == "pipebench-netns "* ]] || return 0
  n=$(sed -n 's/.* nodes=\([0-9]*\).*/\1/p' <<<"$m") owner=$(sed -n 's/.* owner=\([0-9:]*\).*/\1/p' <<<"$m")
  state=$(sed -n 's/.* state=//p' <<<"$m")
  ! alive "$owner" || die "a cluster of this script is running (owner ${owner%%:*}, state ${state}): netns-cluster.sh stop first"
  if [[ -f $state ]]; then
    STATE=$state undo
    rmdir "$(dirname "$state")" 2>/dev/null || true
  else
    for ((i = 0; i < ${n:-0}; i++)); do
      ns=$(node "$i")
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
      ip link del "pbnv$i" 2>/dev/null || true
      rm -f "/etc/netns/$ns/hosts"; rmdir "/etc/netns/$ns" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null || true
  fi
  echo "netns-cluster: removed a stale cluster of ${n:-?} node(s) (its owner ${owner%%:*} is gone)" >&2
}

shaping() {  # shaping OPTION VALUE: --inter-node-rate R or --inter-node-delay D, checked, into RATE or DELAY
  case $1 in
    --inter-node-rate) RATE=$2; [[ $RATE =~ ^[0-9]+(\.[0-9]+)?([kmg]?(bit|bps))$ ]] ||
      die "--inter-node-rate '${RATE}' is not allowed: expected a rate as tc writes it, e.g. 10gbit, 1gbit, 500mbit" ;;
    --inter-node-delay) DELAY=$2; [[ $DELAY =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
      die "--inter-node-delay '${DELAY}' is not allowed: expected a time as tc writes it, e.g. 20us, 100us, 1ms" ;;
  esac
}

do_start() {
  local n=${1:-} i ns v h why
  [[ $n =~ ^[0-9]+$ ]] && ((10#$n >= 1 && 10#$n <= 16)) || die "start: node count '${n}' is not allowed: expected an integer from 1 to 16"
  n=$((10#$n)); shift
  RATE= DELAY= PER=2
  while (($#)); do
    case $1 in
      --inter-node-rate | --inter-node-delay) shaping "$1" "${2:-}"; shift 2 ;;
      --ranks-per-node) PER=${2:-}; [[ $PER =~ ^[0-9]+$ ]] && ((10#$PER >= 1 && 10#$PER <= 64)) ||
        die "--ranks-per-node '${PER}' is not allowed: expected an integer from 1 to 64"; PER=$((10#$PER)); shift 2 ;;
      *) die "start: '$1' is not an option: expected --inter-node-rate R, --inter-node-delay D or --ranks-per-node K" ;;
    esac
  done
  why=$(can_make) || die "cannot make network namespaces: $why"
  [[ -z $DELAY ]] || has_netem || die "--inter-node-delay ${DELAY} cannot be applied: this kernel has no tc netem (sch_netem); a rate alone works"
  OWNER=$(proc_id "$(owner_pid)")
  [[ -n $OWNER ]] || die "PIPEBENCH_NETNS_OWNER '${PIPEBENCH_NETNS_OWNER:-}' is not a running process"
  reap_stale
  # this directory's own state, from a start whose owner is gone before it made the bridge
  if [[ -f $STATE ]] && ! alive "$(conf owner)"; then undo; fi
  [[ ! -f $STATE ]] || die "a cluster is running (state in $STATE, owner $(conf owner | cut -d: -f1)): netns-cluster.sh stop first"
  for ((i = 0; i < n; i++)); do ! ip netns list | grep -qw "$(node "$i")" || die "namespace $(node "$i") exists but is not this script's"; done
  ! ip link show "$BRIDGE" >/dev/null 2>&1 || die "link $BRIDGE exists but is not this script's"
  mkdir -p "$DIR"
  : >"$STATE"
  trap 'echo "netns-cluster: start failed at line $LINENO; removing what it made" >&2; undo; rmdir "$DIR" 2>/dev/null || true; exit 1' ERR
  made conf "nodes=$n"; made conf "per=$PER"; made conf "rate=$RATE"; made conf "delay=$DELAY"; made conf "owner=$OWNER"
  ip link add "$BRIDGE" type bridge; made link "$BRIDGE"
  ip link set "$BRIDGE" alias "pipebench-netns nodes=$n owner=$OWNER state=$STATE"
  ip addr add "$HOSTADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  [[ -d /etc/netns ]] || { mkdir /etc/netns; made dir /etc/netns; }
  for ((i = 0; i < n; i++)); do
    ns=$(node "$i") v=pbnv$i
    ip netns add "$ns"; made netns "$ns"
    # ip netns exec bind-mounts /etc/netns/NS/hosts over /etc/hosts: every node resolves every node
    mkdir "/etc/netns/$ns"; made dir "/etc/netns/$ns"
    {
      echo "127.0.0.1 localhost"
      for ((h = 0; h < n; h++)); do echo "$NET.$((h + 1)) $(node "$h")"; done
      echo "$HOSTADDR $(hostname)"
    } >"/etc/netns/$ns/hosts"; made file "/etc/netns/$ns/hosts"
    ip link add "$v" type veth peer name eth0 netns "$ns"; made link "$v"
    ip link set "$v" master "$BRIDGE" up
    ip netns exec "$ns" ip addr add "$NET.$((i + 1))/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    shape "$ns"
  done
  printf '#!/bin/sh\nexec %q launch "$@"\n' "$SELF" >"$DIR/launch"; made file "$DIR/launch"
  chmod +x "$DIR/launch"
  local hosts=()
  for ((i = 0; i < n; i++)); do hosts+=("$(node "$i"):$PER"); done
  # UCX: TCP on the node's eth0 between nodes, shared memory (sysv, posix) within one. Each node has
  # an IPC namespace of its own (launch), which UCX checks before it uses shared memory, so two
  # nodes never share it; cma is left out, as it reaches across namespaces and would bypass the
  # shaped link. Hydra's -iface: the proxies reach mpiexec at the bridge's address.
  printf '#!/bin/sh\nexec mpiexec -launcher ssh -launcher-exec %q -iface %s -hosts %s -genv UCX_TLS tcp,self,sysv,posix -genv UCX_NET_DEVICES eth0 "$@"\n' \
    "$DIR/launch" "$BRIDGE" "$(IFS=,; echo "${hosts[*]}")" >"$DIR/mpiexec"; made file "$DIR/mpiexec"
  chmod +x "$DIR/mpiexec"
  trap - ERR
  echo "netns-cluster: $n node(s) up: $(for ((i = 0; i < n; i++)); do printf '%s=%s.%d ' "$(node "$i")" "$NET" $((i + 1)); done)rate ${RATE:-unshaped} delay ${DELAY:-0}" >&2
}

# reshape [--inter-node-rate R] [--inter-node-delay D]: the running cluster's inter-node links shaped
# anew (what is not given stays as it was), so that one set of nodes is machine A, then machine B, in
# turns (the rehearsal interleaves their repeats: docs/netns.md).
do_reshape() {
  [[ -f $STATE ]] || die "no cluster is running (netns-cluster.sh start N)"
  local n i
  n=$(conf nodes) RATE=$(conf rate) DELAY=$(conf delay)
  while (($#)); do
    case $1 in
      --inter-node-rate | --inter-node-delay) shaping "$1" "${2:-}"; shift 2 ;;
      *) die "reshape: '$1' is not an option: expected --inter-node-rate R or --inter-node-delay D" ;;
    esac
  done
  [[ -z $DELAY ]] || has_netem || die "--inter-node-delay ${DELAY} cannot be applied: this kernel has no tc netem (sch_netem); a rate alone works"
  for ((i = 0; i < n; i++)); do shape "$(node "$i")"; done
  sed -i "s/^conf rate=.*/conf rate=$RATE/; s/^conf delay=.*/conf delay=$DELAY/" "$STATE"
}

do_launch() {
  # hydra's ssh launcher: [options] HOST COMMAND... (-x, -q, -o X, -p N, -l U: skipped)
  while [[ ${1:-} == -* ]]; do case $1 in -o | -p | -l | -i) shift 2 ;; *) shift ;; esac; done
  local host=${1:-}; shift || true
  [[ $host =~ ^pbnode[0-9]+$ ]] && ip netns list | grep -qw "$host" || die "launch: '$host' is not a node of the cluster"
  # UTS and IPC namespaces of its own (the node's name; shared memory only within the node), then the
  # command as ssh runs it (a shell line).
  exec ip netns exec "$host" unshare --uts --ipc sh -c 'hostname "$1"; shift; exec sh -c "$*"' sh "$host" "$@"
}

do_env() {
  [[ -f $STATE ]] || die "no cluster is running (netns-cluster.sh start N)"
  local n i nodes=()
  n=$(conf nodes)
  for ((i = 0; i < n; i++)); do nodes+=("$(node "$i")"); done
  echo "export PIPEBENCH_NETNS_MPIEXEC=$DIR/mpiexec"
  echo "export PIPEBENCH_NETNS_NODES='${nodes[*]}'"
  echo "export PIPEBENCH_NETNS_RANKS_PER_NODE=$(conf per)"
}

do_partition() {  # partition I on|off
  [[ -f $STATE ]] || die "no cluster is running"
  local i=${1:-} n
  n=$(conf nodes)
  [[ $i =~ ^[0-9]+$ ]] && ((10#$i < n)) || die "node '${i}' is not allowed: expected 0 to $((n - 1))"
  local ns v
  ns=$(node "$((10#$i))") v=pbnv$((10#$i))
  # the node's bridge port down: its eth0 keeps its address and routes (no carrier), so every
  # packet either way is dropped silently, as on a cut cable; nothing is told to the processes
  if [[ $2 == on ]]; then ip link set "$v" down; else ip link set "$v" up; fi
}

case ${1:-} in
  start) shift; do_start "$@" ;;
  stop) undo; rmdir "$DIR" 2>/dev/null || true ;;
  env) do_env ;;
  reshape) shift; do_reshape "$@" ;;
  launch) shift; do_launch "$@" ;;
  partition) do_partition "${2:-}" on ;;
  heal) do_partition "${2:-}" off ;;
  check) why=$(can_make) || die "cannot make network namespaces: $why" ;;
  *) die "usage: netns-cluster.sh start N [--inter-node-rate R] [--inter-node-delay D] [--ranks-per-node K] | stop | env | reshape [--inter-node-rate R] [--inter-node-delay D] | partition I | heal I | check" ;;
esac
