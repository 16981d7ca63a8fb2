#!/usr/bin/env bash
# What the README's two commands download and take on disk, measured where
# a newcomer starts: a fresh Debian 12 root (debootstrap --variant=minbase,
# made once and kept, scripts/debian-root.sh) with git, where apt is asked (answering
# no) what installing each of scripts/setup.sh's package sets would fetch and
# use. Prints one line per set, in MB:
#   sizes: build download 95 disk 380
#   sizes: demo download 223 disk 1900      (after build)
#   sizes: tests download 124 disk 600      (after demo)
# tests/e2e/test_sizes.py checks that README.md says these figures. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${AML_SIZES_ROOT:-/var/cache/aml-shim/bookworm-minbase}
[ "$(id -u)" = 0 ] || { echo "sizes: needs root (debootstrap, chroot); run it with sudo" >&2; exit 1; }
scripts/debian-root.sh bookworm "$ROOT" >&2
chroot "$ROOT" sh -c 'apt-get update -qq' >&2
# The README's newcomer has git (the clone): its packages are not counted.
chroot "$ROOT" sh -c 'command -v git >/dev/null ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git >/dev/null' >&2
# The package sets, as scripts/setup.sh names them.
sets=$(sed -n '/^build=(/,/^)/p; /^demo=(/p; /^tests=(/,/^)/p' scripts/setup.sh)
build=$(echo "$sets" | sed -n '/^build=(/,/^)/p' | tr -d '()' | sed 's/^build=//' | tr '\n' ' ')
demo=$(echo "$sets" | sed -n 's/^demo=(\(.*\))/\1/p')
tests=$(echo "$sets" | sed -n '/^tests=(/,/^)/p' | tr -d '()' | sed 's/^tests=//' | tr '\n' ' ')
# "Need to get 95.0 MB of archives." / "After this operation, 380 MB of
# additional disk space will be used.": in MB (kB and GB converted).
mb() { awk -v n="$1" -v u="$2" 'BEGIN { f = (u == "kB") ? 0.001 : (u == "GB") ? 1000 : 1; printf "%d", n * f + 0.5 }'; }
ask() {  # ask NAME PACKAGES...: what installing them after the earlier sets costs
  local name=$1 out get disk
  shift
  out=$(chroot "$ROOT" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install --assume-no \
    --no-install-recommends -o APT::Get::HideAutoRemove=1 "$@" 2>&1' sh "$@" || true)
  get=$(echo "$out" | sed -n 's/^Need to get \([0-9.,]*\) \([kMG]B\).*/\1 \2/p' | tr -d , | tail -1)
  disk=$(echo "$out" | sed -n 's/^After this operation, \([0-9.,]*\) \([kMG]B\).*/\1 \2/p' | tr -d , | tail -1)
  [ -n "$get" ] && [ -n "$disk" ] || { echo "sizes: apt said nothing of $name:" >&2; echo "$out" | tail -5 >&2; exit 1; }
  echo "sizes: $name download $(mb $get) disk $(mb $disk)"
}
# Each set on top of the ones before: asked with them all, minus the earlier.
total() { ask "$@" | awk '{print $4, $6}'; }
read -r b_get b_disk < <(total build $build)
read -r d_get d_disk < <(total demo $build $demo)
read -r t_get t_disk < <(total tests $build $demo $tests)
echo "sizes: build download $b_get disk $b_disk"
echo "sizes: demo download $((d_get - b_get)) disk $((d_disk - b_disk))"
echo "sizes: tests download $((t_get - d_get)) disk $((t_disk - d_disk))"
