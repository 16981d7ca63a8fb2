#!/bin/sh
# prterun's ssh agent for the netns nodes of scripts/netns-cluster.sh, run
# inside a Debian trixie root (scripts/in-root.sh): [-options] HOST COMMAND...
# runs COMMAND in namespace HOST with a hostname and a /sys of its own: Open
# MPI 5 tells nodes apart by host name (a shared one makes one node of all).
#   mpirun --prtemca plm_ssh_agent .../ompi5-netns-agent.sh --prtemca plm_ssh_no_tree_spawn 1 ...
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host=$1
shift
exec nsenter --net=/run/netns/"$host" unshare --uts --mount --propagation unchanged /bin/sh -c \
  'hostname "$1" && mount -t sysfs sysfs /sys && exec /bin/sh -c "$2"' sh "$host" "$*"
