#!/usr/bin/env bash
# A multi-node Slurm on this machine, for tests: a netns cluster
# (scripts/netns-cluster.sh) with slurmd in every namespace and slurmctld in
# the root namespace on the bridge. Own config file, ports, state, spool,
# pid, log and TmpFS per node, so the one-node Slurm of slurm-local.sh and
# /etc/slurm stay as they are. Needs root, slurm-wlm and munge.
#   scripts/slurm-netns.sh up NAME NODES SUBNET   # prints the SLURM_CONF to export
#   scripts/slurm-netns.sh down NAME
# Each node gets a tmpfs /sys/fs/cgroup with the cgroup v1 hierarchies that
# slurmd 22.05 looks for (ip netns exec mounts a fresh /sys).
set -euo pipefail
trap 'echo "slurm-netns: line $LINENO failed: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:-}
name=${2:-}
[[ -n $cmd && -n $name ]] || { sed -n '2,10p' "$0" >&2; exit 2; }
dir=/tmp/aml-slurm-netns-$name
conf=$dir/slurm.conf

down() {
  for pidfile in "$dir"/slurmd.*.pid "$dir"/slurmctld.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  "$here/netns-cluster.sh" down "$name" >/dev/null 2>&1 || true
  rm -rf "$dir"
}

up() {
  local nodes=$1 subnet=$2 net="198.18.$2"
  down
  "$here/netns-cluster.sh" up "$name" "$nodes" "$subnet" >/dev/null
  mkdir -p "$dir"/{state,spool,tmp,log}
  # munge, as the one-node script does.
  AML_SLURM_DIR=$dir/one "$here/slurm-local.sh" munge >/dev/null
  {
    echo "ClusterName=aml$name"
    echo "SlurmctldHost=$(hostname)($net.254)"
    echo "SlurmctldPort=${AML_SLURMCTLD_PORT:-7817}"
    echo "SlurmdPort=${AML_SLURMD_PORT:-7818}"
    echo "AuthType=auth/munge"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    echo "TmpFS=$dir/tmp/%n"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "ReturnToService=2"
    echo "MpiDefault=none"
    echo "JobCompType=jobcomp/none"
    echo "AccountingStorageType=accounting_storage/none"
    local list=""
    for i in $(seq "$nodes"); do
      echo "NodeName=$name$i NodeAddr=$net.$i CPUs=2 State=UNKNOWN"
      list+="${list:+,}$name$i"
      mkdir -p "$dir/tmp/$name$i" "$dir/spool/$name$i"
    done
    echo "PartitionName=debug Nodes=$list Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
  } >"$conf"
  slurmctld -f "$conf"
  for i in $(seq "$nodes"); do
    ip netns exec "$name$i" sh -c '
      mount -t tmpfs cgroup /sys/fs/cgroup
      for c in cpu cpuacct cpuset memory devices freezer blkio pids; do
        mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c
      done
      mkdir -p /sys/fs/cgroup/systemd
      mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
      exec slurmd -N "$1" -f "$2"' sh "$name$i" "$conf"
  done
  for _ in $(seq 100); do
    if [[ $(SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null | grep -cE '^(idle|mix|alloc)') -ge 1 ]] &&
       [[ $(SLURM_CONF=$conf sinfo -h -N -o %t 2>/dev/null | grep -cvE '^(idle|mix|alloc)') -eq 0 ]]; then
      echo "$conf"
      return 0
    fi
    sleep 0.3
  done
  echo "slurm-netns: nodes did not become idle; logs in $dir/log" >&2
  SLURM_CONF=$conf sinfo -N >&2 || true
  tail -3 "$dir"/log/*.log >&2 || true
  return 1
}

case "$cmd" in
  up) up "${3:?NODES}" "${4:?SUBNET}" ;;
  down) down ;;
  *) sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
