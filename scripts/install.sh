#!/usr/bin/env bash
# Installs the build (build/, scripts/build.sh's) under a prefix, stripped,
# or takes it away again:
#   scripts/install.sh                      /usr/local (sudo when not root)
#   scripts/install.sh --prefix ~/.local    a prefix of your own: no sudo
#   scripts/install.sh --uninstall [--prefix P]
# It installs bin/aml-shim, share/man/man1/aml-shim.1 and
# share/doc/aml-shim/. The list of what it installed is kept per prefix in
# build/ and stays the invoking user's (a root-owned one blocks that user's
# next install), with the folders the install made; the uninstall removes
# those files, and of those folders the ones left empty (never a folder
# that was there before, such as /usr/local/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
uninstall=0
while (($#)); do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
prefix=$(realpath -m "$prefix")
manifest="build/install_manifest$(echo "$prefix" | tr '/' '_').txt"
made="${manifest%.txt}.dirs"
# sudo only where this user cannot write.
probe=$prefix
while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
SUDO=""
if [ ! -w "$probe" ] && [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ "$uninstall" = 1 ]; then
  [ -f "$manifest" ] || { echo "install: nothing installed under $prefix from this build ($manifest)" >&2; exit 1; }
  # A folder the install made: one it recorded, or inside one (an install
  # before this list was kept made none it knows of).
  made_here() {
    [ -f "$made" ] || return 1
    local m
    while IFS= read -r m; do
      case "$1/" in "$m"/*) return 0 ;; esac
    done <"$made"
    return 1
  }
  dirs=()
  while IFS= read -r f || [ -n "$f" ]; do
    [ -n "$f" ] || continue
    $SUDO rm -f -- "$f"
    dirs+=("$(dirname "$f")")
  done <"$manifest"
  # The folders it made that are left empty, deepest first.
  for d in $(printf '%s\n' "${dirs[@]}" | sort -u | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-); do
    while made_here "$d" && [ -d "$d" ] && [ -z "$(ls -A "$d")" ]; do
      $SUDO rmdir -- "$d"
      d=$(dirname "$d")
    done
  done
  rm -f "$manifest" "$made"
  echo "install: removed aml-shim from $prefix"
  exit 0
fi

[ -x build/aml-shim ] || { echo "install: build/aml-shim is missing: run scripts/build.sh first" >&2; exit 1; }
# The folders this install makes (with the ones an earlier install made,
# which are still its to remove): those not there yet, up to the prefix.
{
  [ ! -f "$made" ] || cat "$made"
  for d in "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/doc/aml-shim"; do
    while [ "$d" != / ] && [ ! -e "$d" ]; do echo "$d"; d=$(dirname "$d"); done
  done
} | sort -u >"$made.new"
mv -f "$made.new" "$made"
$SUDO cmake --install build --prefix "$prefix" --strip
# cmake writes build/install_manifest.txt (as root, under sudo): kept per
# prefix, and the invoking user's.
$SUDO mv -f build/install_manifest.txt "$manifest"
[ -z "$SUDO" ] || $SUDO chown "$(id -u):$(id -g)" "$manifest"
echo "install: $prefix/bin/aml-shim ($(du -k "$prefix/bin/aml-shim" | cut -f1) KB); uninstall: scripts/install.sh --uninstall$([ "$prefix" = /usr/local ] || echo " --prefix $prefix")"
