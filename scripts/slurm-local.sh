#!/usr/bin/env bash
# A real one-node Slurm on this machine, for tests and demos (needs root and
# the slurm-wlm and munge packages).
#   scripts/slurm-local.sh start   # munged + slurmctld + slurmd, waits for idle
#   scripts/slurm-local.sh stop    # stops what start started
#   scripts/slurm-local.sh munge   # only munged (scripts/slurm-netns.sh uses it)
# State lives under $AML_SLURM_DIR (default /tmp/aml-shim-slurm); the
# configuration is $AML_SLURM_DIR/slurm.conf (export SLURM_CONF to use it).
# Exit 3: this machine cannot run a Slurm of its own (no cgroup file system,
# as in a chroot; its ports taken by another Slurm), said in one line; the
# tests then list themselves as skipped, not failed.
set -Eeuo pipefail
# A failing step must say which: set -e alone exits without a word (-E: in
# functions too).
trap 'echo "slurm: line $LINENO failed: $BASH_COMMAND" >&2' ERR
# What it needs, each named: nothing starts without them.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
if [[ ${1:-} != stop ]]; then
  missing=()
  for tool in munged munge unmunge slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    echo "slurm: ${missing[*]} not installed: sudo apt-get install slurm-wlm munge" \
      "(scripts/setup.sh --tests installs them)" >&2
    exit 1
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "slurm: needs root (it starts munged, slurmctld and slurmd): sudo $0 $*" >&2
    exit 1
  fi
fi
dir=${AML_SLURM_DIR:-/tmp/aml-shim-slurm}
conf=$dir/slurm.conf
host=$(hostname -s)
cpus=$(nproc)

munge_up() {
  if [[ ! -f /etc/munge/munge.key ]]; then
    mungekey --create >/dev/null 2>&1 || create-munge-key >/dev/null 2>&1
  fi
  chown munge:munge /etc/munge/munge.key 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge && chown munge:munge /run/munge
  # A munged already running is used only if it answers on the default
  # socket with this machine's key (another one may belong to someone else).
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    if pid=$(pgrep -x munged | head -1) && [[ -n $pid ]]; then
      echo "slurm: a munged (pid $pid, $(ps -o user= -p "$pid" 2>/dev/null || echo '?')) is running" \
        "but does not answer on /run/munge with this machine's key (another setup's?);" \
        "stop it (kill $pid) or point this script at a machine without one" >&2
      return 1
    fi
    runuser -u munge -- /usr/sbin/munged
  fi
}

# Says in one line why this machine cannot run a Slurm of its own, or nothing.
cannot_run_here() {
  # slurmd reads its cgroup hierarchy at start even with proctrack/linuxproc.
  if ! awk '$5 ~ "^/sys/fs/cgroup" { for (i = 6; i < NF; i++) if ($i == "-" && $(i + 1) ~ /^cgroup2?$/) found = 1 }
            END { exit !found }' /proc/self/mountinfo 2>/dev/null; then
    echo "no cgroup file system is mounted at /sys/fs/cgroup (a chroot or a container without" \
      "it?): slurmd needs one"
    return
  fi
  local port name
  for port in "${AML_SLURMCTLD_PORT:-6817}:slurmctld" "${AML_SLURMD_PORT:-6818}:slurmd"; do
    name=${port#*:} port=${port%%:*}
    if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
      echo "port $port, $name's, is taken ($(ss -Hltnp "sport = :$port" 2>/dev/null |
        grep -o 'users:(("[^"]*",pid=[0-9]*' | sed 's/users:(("//; s/",pid=/, pid /' | head -1 ||
        true)): another Slurm? Stop it, or give this one other ports (AML_SLURMCTLD_PORT," \
        "AML_SLURMD_PORT)"
      return
    fi
  done
}

# Runs a daemon; one that does not start says why, with its log's last lines.
daemon() {
  local name=$1 rc=0
  shift
  "$name" "$@" || rc=$?
  if ((rc)); then
    echo "slurm: $name did not start (exit $rc); the end of $dir/log/$name.log:" >&2
    tail -5 "$dir/log/$name.log" >&2 2>/dev/null || echo "  (no log)" >&2
    return 1
  fi
}

start() {
  local why
  why=$(cannot_run_here)
  if [[ -n $why ]]; then
    echo "slurm: cannot run here: $why" >&2
    exit 3
  fi
  mkdir -p "$dir"/{spool,state,log}
  munge_up
  cat >"$conf" <<CONF
ClusterName=amlshim
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${AML_SLURMCTLD_PORT:-6817}
SlurmdPort=${AML_SLURMD_PORT:-6818}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
  daemon slurmctld -f "$conf" || exit 1
  daemon slurmd -f "$conf" || exit 1
  for _ in $(seq 1 60); do
    if SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "slurm: up ($host, conf $conf)"
      return 0
    fi
    sleep 0.5
  done
  echo "slurm: node did not become idle; logs in $dir/log" >&2
  SLURM_CONF=$conf sinfo >&2 || true
  tail -5 "$dir"/log/*.log >&2 || true
  if grep -q "Hybrid mode is not supported" "$dir"/log/slurmd.log 2>/dev/null; then
    echo "slurm: slurmd found cgroup v1 and v2 hierarchies mounted together (hybrid), which" \
      "Slurm 22.05 refuses; boot with one hierarchy (systemd.unified_cgroup_hierarchy=1)" >&2
  fi
  return 1
}

stop() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    if [[ -f $pidfile ]]; then
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$pidfile"
    fi
  done
  rm -rf "$dir/state" "$dir/spool"
  echo "slurm: stopped"
}

case "${1:-}" in
  start) start ;;
  munge) munge_up ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop|munge" >&2; exit 2 ;;
esac
