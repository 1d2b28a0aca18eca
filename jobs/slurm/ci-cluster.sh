#!/usr/bin/env bash
# ci-cluster.sh: a throwaway one-machine Slurm cluster for the tests (Debian 12, Slurm 22.05), started
# without systemd or cgroups: a private munged, slurmctld and one slurmd, every file under one
# directory, CPUs declared beyond the hardware so that 4- and 8-task jobs run on a 2-core machine.
#
#   ci-cluster.sh start      install what is missing, (re)start from empty state, wait until the node is idle
#   ci-cluster.sh stop       cancel every job, stop the daemons by the pids in their pid files
#   ci-cluster.sh status     daemons, sinfo, squeue
#   ci-cluster.sh wait [-t SECONDS] JOBID...
#                            poll (0.5 s) until the jobs (array tasks included) have ended; exit 0 when
#                            every one COMPLETED with 0:0, 1 otherwise, 124 after SECONDS (default 300,
#                            the jobs are then cancelled). `sbatch --wait` polls after 2, 10, 42 s.
#   ci-cluster.sh env        print the line that points Slurm's commands at this cluster
#
# Then, in the caller:  export SLURM_CONF=$PIPEBENCH_SLURM_DIR/etc/slurm.conf   (ci-cluster.sh env)
#
# Environment: PIPEBENCH_SLURM_DIR (default /tmp/pipebench-slurm) holds configuration, state, logs,
# pid files and the munge key and socket; PIPEBENCH_SLURM_CPUS (8) CPUs declared for the node;
# PIPEBENCH_SLURM_PORT (6817; slurmd uses the next port). Must run as root (the daemons and the jobs run
# as root). docs/slurm.md, "Testing on a real Slurm".
# PIPEBENCH_SLURM_NETNS="pbnode0=10.213.0.1 pbnode1=10.213.0.2": one node per emulated node of
# jobs/netns-cluster.sh instead, each slurmd inside its node's network namespace (nsenter: the host's
# mounts stay, slurmd needs /sys/fs/cgroup, which `ip netns exec` remounts away) with a UTS and an IPC
# namespace of its own (the node's host name; shared memory only within the node), at the node's
# address; slurmctld then listens at PIPEBENCH_SLURM_CTLD_ADDR (the bridge's, 10.213.0.254).
# docs/netns.md, "Slurm per namespace".
set -euo pipefail

DIR=${PIPEBENCH_SLURM_DIR:-/tmp/pipebench-slurm}
CPUS=${PIPEBENCH_SLURM_CPUS:-8}
PORT=${PIPEBENCH_SLURM_PORT:-6817}
CONF=$DIR/etc/slurm.conf
SOCK=$DIR/munge/socket
HOST=$(hostname -s)
NETNS=${PIPEBENCH_SLURM_NETNS:-}
CTLD_ADDR=${PIPEBENCH_SLURM_CTLD_ADDR:-127.0.0.1}
export SLURM_CONF=$CONF

say() { echo "ci-cluster: $*" >&2; }

# The pid in a pid file, if it is still one of our daemons (a stale file whose pid was reused is not).
daemon_pid() {
  local pid
  [[ -r $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  case $(cat "/proc/$pid/comm" 2>/dev/null) in munged | slurmctld | slurmd) echo "$pid" ;; *) return 1 ;; esac
}

# The nodes' lines: one node on this host, or one per emulated node (name=address), each slurmd's
# spool, pid and log file by its name (%n)
node_lines() {
  local mem=$1 e names=()
  if [[ -z $NETNS ]]; then
    echo "NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem State=UNKNOWN"
    echo "PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP"
    return
  fi
  for e in $NETNS; do
    echo "NodeName=${e%%=*} NodeAddr=${e#*=} CPUs=$CPUS RealMemory=$mem State=UNKNOWN"
    names+=("${e%%=*}")
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP"
}

install_missing() {
  local want=(slurmctld slurmd slurm-client munge) missing=() p policy=0
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "installing ${missing[*]}"
  # The packages' maintainer scripts would start system daemons through /etc/init.d: a policy-rc.d
  # that says no keeps them from it (left alone when the machine has one already).
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy=1; fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  ((policy == 0)) || rm -f /usr/sbin/policy-rc.d
}

write_conf() {
  local mem sfx=
  [[ -z $NETNS ]] || sfx=-%n
  mem=$(/usr/sbin/slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  mkdir -p "$DIR"/{etc,log,run,state}
  cat >"$CONF" <<CONF
# written by jobs/slurm/ci-cluster.sh: one node, no systemd, no cgroups, no accounting
ClusterName=pipebench-ci
SlurmctldHost=$HOST($CTLD_ADDR)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s + 1)
AuthInfo=socket=$SOCK,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/state/slurmd$sfx
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd$sfx.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd$sfx.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
# Debian's MPICH speaks PMI-1/PMI-2: a plain srun then starts one MPI job, not N one-rank jobs
MpiDefault=pmi2
MailProg=/bin/true
SchedulerType=sched/backfill
# schedule every 2 s (default 60 s), so a requeued job starts soon after its begin time
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# take CPUs=$CPUS as declared although the hardware has fewer (else the node is drained as invalid)
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
DependencyParameters=kill_invalid_depend
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=300
$(node_lines "$mem")
CONF
}

start_munge() {
  mkdir -p "$DIR/munge"
  [[ -s $DIR/munge/key ]] || mungekey --create --keyfile="$DIR/munge/key" 2>/dev/null ||
    dd if=/dev/urandom of="$DIR/munge/key" bs=1024 count=1 status=none
  chown -R munge:munge "$DIR/munge"
  chmod 755 "$DIR/munge"  # munged wants its socket directory searchable by all
  chmod 600 "$DIR/munge/key"
  rm -f "$SOCK" "$SOCK.lock"
  setpriv --reuid=munge --regid=munge --init-groups -- /usr/sbin/munged --socket="$SOCK" \
    --key-file="$DIR/munge/key" --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
    --seed-file="$DIR/munge/seed" </dev/null >/dev/null 2>&1 || { say "munged failed: $(tail -n 1 "$DIR/munge/munged.log")"; return 1; }
  local i
  for ((i = 0; i < 50; i++)); do [[ -S $SOCK ]] && return 0; sleep 0.1; done
  say "munged did not create its socket"; return 1
}

do_stop() {
  local pids=() p f i
  if p=$(daemon_pid "$DIR/run/slurmctld.pid"); then
    # Jobs first: a job step (slurmstepd and its tasks) outlives slurmd.
    scancel --quiet --partition=debug 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.2
    done
  fi
  for f in "$DIR"/run/slurmd*.pid "$DIR/run/slurmctld.pid" "$DIR/munge/munged.pid"; do
    if p=$(daemon_pid "$f"); then kill -TERM "$p" 2>/dev/null || true; pids+=("$p"); fi
  done
  for p in "${pids[@]}"; do
    for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { say "pid $p still runs after 10 s: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; }
  done
  rm -f "$DIR"/run/*.pid "$DIR/munge/munged.pid"
  return 0
}

do_start() {
  [[ $(id -u) == 0 ]] || { say "must run as root"; return 1; }
  install_missing
  do_stop
  rm -rf "$DIR/state" "$DIR/log"
  write_conf
  start_munge
  /usr/sbin/slurmctld -f "$CONF" </dev/null >/dev/null 2>&1
  local i e n=1 name
  if [[ -z $NETNS ]]; then
    /usr/sbin/slurmd -f "$CONF" </dev/null >/dev/null 2>&1
  else
    n=0
    for e in $NETNS; do
      name=${e%%=*} n=$((n + 1))
      [[ -e /run/netns/$name ]] || { say "no network namespace $name (jobs/netns-cluster.sh start first)"; return 1; }
      mkdir -p "$DIR/state/slurmd-$name"
      nsenter --net="/run/netns/$name" unshare --uts --ipc sh -c 'hostname "$1"; shift; exec "$@"' sh "$name" \
        /usr/sbin/slurmd -f "$CONF" -N "$name" </dev/null >/dev/null 2>&1
    done
  fi
  for ((i = 0; i < 120; i++)); do
    [[ $(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l) == "$n" ]] && { say "ready: $(sinfo -h -o '%P %D node(s) %c CPUs %t')"; return 0; }
    sleep 0.25
  done
  say "the node did not become idle within 30 s"; sinfo -N >&2 || true; tail -n 5 "$DIR"/log/*.log >&2 || true
  return 1
}

do_status() {
  local f p
  for f in "$DIR/munge/munged.pid" "$DIR/run/slurmctld.pid" "$DIR"/run/slurmd*.pid; do
    if p=$(daemon_pid "$f"); then echo "$(basename "$f" .pid): pid $p"; else echo "$(basename "$f" .pid): not running"; fi
  done
  if daemon_pid "$DIR/run/slurmctld.pid" >/dev/null; then sinfo; squeue; fi
}

do_wait() {
  local limit=300 id out line busy rc=0
  if [[ ${1:-} == -t ]]; then limit=$2; shift 2; fi
  local end=$((SECONDS + limit))
  while :; do
    busy=0
    for id in "$@"; do
      out=$(scontrol -o show job "$id" 2>/dev/null) || continue
      grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUED|RESIZING|SUSPENDED|REQUEUE_HOLD|REQUEUE_FED|STAGE_OUT|SIGNALING)' <<<"$out" && busy=1
    done
    ((busy)) || break
    if ((SECONDS >= end)); then say "jobs $* still not done after ${limit} s: cancelled"; scancel "$@" 2>/dev/null || true; return 124; fi
    sleep 0.5
  done
  for id in "$@"; do
    out=$(scontrol -o show job "$id" 2>/dev/null) || { echo "JobId=$id unknown"; rc=1; continue; }
    while read -r line; do
      grep -oE '^JobId=[0-9]+|ArrayTaskId=[0-9]+|JobState=[A-Z_]+|Restarts=[0-9]+|ExitCode=[0-9]+:[0-9]+' <<<"$line" | tr '\n' ' '
      echo
      [[ $line == *JobState=COMPLETED* && $line == *" ExitCode=0:0"* ]] || rc=1
    done <<<"$out"
  done
  return $rc
}

case ${1:-} in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  wait) shift; do_wait "$@" ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|status|wait [-t SECONDS] JOBID...|env" >&2; exit 2 ;;
esac
