#!/bin/sh
# A cluster of N "nodes" on this machine: one network namespace per node on a
# bridge, names in /etc/hosts, and an rsh agent so that
#   mpirun --mca plm_rsh_agent "$(scripts/netns-cluster.sh agent c)" --host c1:2,c2:2 \
#     --mca rtc_hwloc_vmhole none ...
# starts a real orted in each namespace (vmhole none: orted's shared-memory
# hwloc topology now and then crashed it here). Needs root and iproute2.
#
#   netns-cluster.sh up NAME NODES SUBNET [--decoy]
#       nodes NAME1..NAMEn, node i at 198.18.SUBNET.i/24 on interface eth0,
#       bridge NAMEbr at 198.18.SUBNET.254 in the root namespace.
#       --decoy: every node also gets docker0 = 172.17.0.1/16, created before
#       eth0 so that it is listed first (as on a Docker host).
#   netns-cluster.sh down NAME      remove the namespaces, bridge and names
#   netns-cluster.sh agent NAME     print the path of the rsh agent
#   netns-cluster.sh hosts NAME     print the node names, one per line
#
# Every namespace shares this machine's hostname, which resolves to loopback:
# the trap that makes Gloo connect to 127.0.0.1 on real clusters.
set -eu

STATE=/run/aml-netns
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 name=$2
case "$name" in *[!a-z0-9]*|'') echo "netns-cluster: bad name '$name'" >&2; exit 2;; esac
[ ${#name} -le 8 ] || { echo "netns-cluster: name '$name' longer than 8" >&2; exit 2; }
dir=$STATE/$name

# /etc/hosts may be a bind mount: rewrite it in place, under a lock, since
# parallel tests each add and remove their own lines.
hosts_edit() {  # $1: lines to add ("" for none); removes this cluster's lines first
  mkdir -p "$STATE"
  (
    flock 9
    tmp=$(mktemp)
    grep -v " # aml-netns $name\$" /etc/hosts >"$tmp" || true
    [ -z "$1" ] || printf '%s\n' "$1" >>"$tmp"
    cat "$tmp" >/etc/hosts
    rm -f "$tmp"
  ) 9>"$STATE/hosts.lock"
}

down() {
  if [ -f "$dir/nodes" ]; then
    for n in $(cat "$dir/nodes"); do
      # Kill whatever still runs in the namespace (a failed test's orted).
      pids=$(ip netns pids "$n" 2>/dev/null || true)
      [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
      ip netns del "$n" 2>/dev/null || true
      ip link del "${name}h${n#$name}" 2>/dev/null || true
    done
  fi
  ip link del "${name}br" 2>/dev/null || true
  hosts_edit ""
  rm -rf "$dir"
}

case "$cmd" in
  up)
    [ $# -ge 4 ] || usage
    nodes=$3 subnet=$4 decoy=${5:-}
    case "$nodes$subnet" in *[!0-9]*) usage;; esac
    down
    mkdir -p "$dir"
    ip link add "${name}br" type bridge
    ip addr add "198.18.$subnet.254/24" dev "${name}br"
    ip link set "${name}br" up
    lines="" list=""
    i=1
    while [ "$i" -le "$nodes" ]; do
      n=$name$i
      ip netns add "$n"
      list="$list $n"
      printf '%s\n' $list >"$dir/nodes"
      ip -n "$n" link set lo up
      if [ "$decoy" = "--decoy" ]; then
        ip -n "$n" link add docker0 type veth peer name docker0p
        ip -n "$n" addr add 172.17.0.1/16 dev docker0
        ip -n "$n" link set docker0 up
        ip -n "$n" link set docker0p up
      fi
      ip link add "${name}h$i" type veth peer name "${name}c$i"
      ip link set "${name}c$i" netns "$n"
      ip -n "$n" link set "${name}c$i" name eth0
      ip -n "$n" addr add "198.18.$subnet.$i/24" dev eth0
      ip -n "$n" link set eth0 up
      ip link set "${name}h$i" master "${name}br"
      ip link set "${name}h$i" up
      lines="${lines}198.18.$subnet.$i $n # aml-netns $name
"
      i=$((i + 1))
    done
    hosts_edit "$(printf '%s' "$lines")"
    cat >"$dir/rsh-agent" <<EOF
#!/bin/sh
# rsh agent for mpirun: [-options] HOST COMMAND... -> run COMMAND in netns HOST.
# Each node's orted gets a session directory of its own: the nodes share /tmp
# and a hostname, and two orteds creating (or one removing) the same
# /tmp/ompi.HOST.UID/jf.N at once failed with "File exists" (exit 213).
while [ \$# -gt 0 ]; do
  case "\$1" in -*) shift ;; *) break ;; esac
done
host=\$1
shift
mkdir -p "$dir/tmp/\$host"
exec ip netns exec "\$host" env OMPI_MCA_orte_tmpdir_base="$dir/tmp/\$host" /bin/sh -c "\$*"
EOF
    chmod +x "$dir/rsh-agent"
    ;;
  down) down ;;
  agent) echo "$dir/rsh-agent" ;;
  hosts) cat "$dir/nodes" ;;
  *) usage ;;
esac
