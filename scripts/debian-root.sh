#!/usr/bin/env bash
# Makes a Debian root once and keeps it (a cache, reused by every later run):
#   debian-root.sh SUITE DIR PACKAGE...
# debootstrap --variant=minbase SUITE into DIR from this machine's Debian
# mirror, then PACKAGEs installed inside it with apt. DIR/.aml-root names the
# suite and packages it was made with: a root made with others is made anew.
# Used by scripts/release.sh (Debian 11, the build root) and by the tests of
# Open MPI 5 and torch 2.x (Debian 13, scripts/trixie-root.sh). Needs root.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: debian-root.sh SUITE DIR PACKAGE..." >&2; exit 2; }
suite=$1 root=$2
shift 2
stamp="$suite $*"
[ "$(id -u)" = 0 ] || { echo "debian-root: needs root (debootstrap, chroot); run it with sudo" >&2; exit 1; }
if [ -f "$root/.aml-root" ] && [ "$(cat "$root/.aml-root")" = "$stamp" ]; then exit 0; fi
# Two tests that need the same root at once (they may run side by side):
# one makes it, the other waits and finds it made.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
if [ -f "$root/.aml-root" ] && [ "$(cat "$root/.aml-root")" = "$stamp" ]; then exit 0; fi

mirror() {
  local m
  m=$(sed -n 's/^URIs: *\([^ ]*debian\/\?\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  [ -n "$m" ] || m=$(sed -n 's/^deb \(\[[^]]*\] \)\?\(http[^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1)
  echo "${m:-http://deb.debian.org/debian}"
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() { echo "debian-root: $1 (last lines of its log below)" >&2; tail -20 "$log" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debian-root: debootstrap is not installed: run scripts/setup.sh --tests" >&2; exit 1; }
# A line per stage, with how long it took: these take minutes.
t0=$SECONDS
stage() { echo "debian-root: $1"; }
took() { echo "debian-root:   done in $((SECONDS - t0)) s ($(du -sh "$root" 2>/dev/null | cut -f1) so far)"; t0=$SECONDS; }
stage "making the Debian $suite root in $root (once; a few minutes; kept for later runs)"
rm -rf "$root"
mkdir -p "$root"
stage "1/2 debootstrap --variant=minbase $suite from $(mirror) (about 30 s)"
# A suite newer than this debootstrap knows (Debian 14, forky, on Debian
# 12) is made with sid's script, as its own would be.
script=()
if [ ! -e "/usr/share/debootstrap/scripts/$suite" ] && [ -e /usr/share/debootstrap/scripts/sid ]; then
  script=(/usr/share/debootstrap/scripts/sid)
fi
debootstrap --variant=minbase "$suite" "$root" "$(mirror)" "${script[@]}" >"$log" 2>&1 ||
  fail "debootstrap $suite failed"
took
echo "deb $(mirror) $suite main" >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
if [ $# -gt 0 ]; then
  stage "2/2 apt-get install in the root: $*"
  # apt's own summary (how much it downloads) is shown; its progress lines go to the log.
  # (pipefail: the pipeline fails when the chroot's apt does.)
  # (A testing suite's Release file may be past its Valid-Until on the
  # mirror: forky's was.)
  if ! chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive
      o="-o Acquire::Check-Valid-Until=false"
      apt-get $o update -qq && apt-get $o install -y --no-install-recommends "$@" &&
      apt-get clean' sh "$@" 2>&1 |
      tee "$log" | { grep -E "^(Need to get|After this operation)" | sed "s/^/debian-root:   /"; true; }; then
    fail "installing $* in the $suite root failed"
  fi
  took
fi
echo "$stamp" >"$root/.aml-root"
echo "debian-root: the $suite root is ready: $(du -sh "$root" | cut -f1) in $root"
