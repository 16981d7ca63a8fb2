#!/bin/sh
# in-root.sh ROOT CMD...: runs CMD in the Debian root ROOT (made by
# scripts/debian-root.sh) as a container would see this machine: chroot, in
# a mount namespace of its own (nothing it mounts outlives it), with this
# machine's /proc, /sys, /dev, /tmp, /etc/hosts and /run/netns (the netns
# nodes of scripts/netns-cluster.sh), a fresh /dev/shm, and each directory
# named in AML_ROOT_BINDS (colon-separated) at the same path. The
# environment passes as it is. Needs root. Used by the tests of Open MPI 5
# and torch 2.x (tests/e2e/test_ompi5.py).
set -eu
[ $# -ge 2 ] || { echo "usage: in-root.sh ROOT CMD..." >&2; exit 2; }
root=$1
shift
[ -f "$root/.aml-root" ] || { echo "in-root: $root is not a root made by scripts/debian-root.sh" >&2; exit 2; }
exec unshare --mount --propagation private --fork /bin/sh -c '
  set -e
  root=$1
  shift
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs tmpfs "$root/dev/shm"
  mount --rbind /tmp "$root/tmp"
  mount --bind /etc/hosts "$root/etc/hosts"
  mkdir -p /run/netns "$root/run/netns"
  mount --rbind /run/netns "$root/run/netns"
  IFS=:
  for d in ${AML_ROOT_BINDS:-}; do
    [ -n "$d" ] || continue
    mkdir -p "$root$d"
    mount --bind "$d" "$root$d"
  done
  unset IFS
  exec chroot "$root" "$@"' in-root "$root" "$@"
