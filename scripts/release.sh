#!/usr/bin/env bash
# Builds the release into dist/ (docs/install.md, "Install"):
#   aml-shim-<version>-linux-x86_64          the stripped binary
#   aml-shim-<version>-linux-x86_64.sha256
#   aml-shim_<version>_amd64.deb             /usr/bin/aml-shim, man page, docs
#   aml_shim-<version>-py3-none-manylinux2014_x86_64.whl
#                                            pip: bin/aml-shim, man page (scripts/wheel.py)
# The binary is built in a Debian 11 root (glibc 2.31, gcc 10; debootstrap
# from this machine's Debian mirror, kept in $AML_RELEASE_ROOT and reused),
# with libstdc++, libgcc and Boost linked statically, so it needs nothing
# newer than GLIBC_2.17 (checked here with objdump). Needs root (chroot).
# <version> is `git describe` of the checkout (scripts/version.sh, the rule
# every build's --version follows): 0.1.0 at tag v0.1.0, else
# 0.1.0+<commits>.g<hash> (+dirty for uncommitted changes).
#
# Its prerequisites (root, debootstrap, dpkg-deb, objdump, a mount
# namespace, disk for the root) are checked before any work; each one
# missing is one line saying what to do.
#
#   scripts/release.sh --local   needs none of that: from this checkout,
#     built in build-local/ (build/ is left alone), dist/ gets the stripped binary and the wheel
#     for this machine's glibc (aml-shim-<version>-linux-x86_64-glibc2.36,
#     aml_shim-<version>-py3-none-manylinux_2_36_x86_64.whl on Debian 12):
#     they run where glibc is as new, not on older systems.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
ROOT=${AML_RELEASE_ROOT:-/var/cache/aml-shim/bullseye-amd64}
MAX_GLIBC=2.17
NEED_MB=1500   # the Debian 11 build root (771 MB) and the build in it
log=$(mktemp)
# debootstrap, chroot and friends live in /usr/sbin, which a user's PATH
# may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
trap 'rm -f "$log"' EXIT
step() { echo "release: $*"; }
fail() { echo "release: $1 (log: last lines below)" >&2; tail -20 "$log" >&2; exit 1; }
local_build=0
case "${1:-}" in
  "") ;;
  --local) local_build=1 ;;
  *) echo "usage: scripts/release.sh [--local]" >&2; exit 2 ;;
esac

version=$(scripts/version.sh)
name=aml-shim-$version-linux-x86_64

# ---- --local: this checkout's build, for this machine's glibc.
if [ "$local_build" = 1 ]; then
  for tool in objdump strip python3; do
    command -v "$tool" >/dev/null || { echo "release: $tool is missing: scripts/setup.sh installs it" >&2; exit 1; }
  done
  # In a build directory of its own (build-local/, aml-shim and its man page
  # only, with the version its name carries): build/ and what runs from it
  # are left alone.
  out=build-local
  step "building aml-shim in $out/ (this machine's compiler and glibc; build/ is left as it is)"
  # (With ccache where installed, as scripts/build.sh: what build/ compiled
  # is not compiled again.)
  launcher=""
  if command -v ccache >/dev/null; then launcher=ccache; fi
  { cmake -S . -B "$out" -G Ninja -DAML_SHIM_WERROR=ON -DAML_SHIM_TESTS=OFF -DAML_SHIM_FUZZ=OFF \
      -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_COMPILER_LAUNCHER="$launcher" \
      -DAML_SHIM_VERSION="$version" && cmake --build "$out" -j "$(nproc)"; } >"$log" 2>&1 ||
    fail "the build in $out/ failed"
  glibc=$(objdump -T "$out/aml-shim" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' |
          sort -t. -k1,1n -k2,2n -u | tail -1)
  local_name=$name-glibc$glibc
  mkdir -p dist
  rm -f "dist/$local_name" "dist/$local_name.sha256" dist/aml_shim-*manylinux_*.whl
  strip --strip-unneeded -o "dist/$local_name" "$out/aml-shim"
  (cd dist && sha256sum "$local_name" >"$local_name.sha256")
  wheel=$(python3 scripts/wheel.py "dist/$local_name" "$version" "$out/aml-shim.1" dist) ||
    { echo "release: the wheel could not be made" >&2; exit 1; }
  step "dist/$local_name (needs GLIBC_$glibc: runs where glibc is $glibc or newer)"
  step "$wheel"
  step "for every glibc since 2.17, and the .deb: sudo scripts/release.sh (a Debian 11 build root)"
  exit 0
fi

# ---- Prerequisites, all checked before any work: one line for each missing.
missing=0
need() { echo "release: $*" >&2; missing=1; }
[ "$(id -u)" = 0 ] ||
  need "needs root (debootstrap and chroot make the Debian 11 build root): run it with sudo;" \
       "or scripts/release.sh --local (no root) for this machine's glibc"
tools=()
for tool in debootstrap dpkg-deb objdump python3 unshare chroot; do
  command -v "$tool" >/dev/null || tools+=("$tool")
done
[ ${#tools[@]} = 0 ] || need "${tools[*]} not found: sudo scripts/setup.sh --tests installs them"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  why=$(unshare --mount --fork true 2>&1) ||
    need "cannot make a mount namespace here (unshare: ${why##*: }): run it as root on a" \
         "machine or VM, not in a chroot or an unprivileged container; or scripts/release.sh --local"
fi
if [ ! -f "$ROOT/.aml-root" ]; then
  parent=$ROOT
  while [ ! -d "$parent" ]; do parent=$(dirname "$parent"); done
  free_mb=$(( $(df --output=avail -k "$parent" | tail -1) / 1024 ))
  [ "$free_mb" -ge "$NEED_MB" ] ||
    need "$free_mb MB free at $parent, the Debian 11 build root needs about $NEED_MB MB:" \
         "free some, or set AML_RELEASE_ROOT to a disk with room"
fi
[ "$missing" = 0 ] || exit 1

# ---- The Debian 11 build root, made once (scripts/debian-root.sh).
# (python3-venv: tests/e2e/test_release.py installs the wheel there.)
scripts/debian-root.sh bullseye "$ROOT" g++ cmake ninja-build make \
  libboost-program-options-dev help2man binutils python3-venv ||
  fail "the Debian 11 build root could not be made"

# ---- Build there from a clean copy of the checkout (tracked files only).
step "building $name in the Debian 11 root"
rm -rf "$ROOT/src" && mkdir -p "$ROOT/src"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$ROOT/src"
unshare --mount --fork sh -c '
  mount -t proc proc "$1/proc" && chroot "$1" sh -c "
    cd /src && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAML_SHIM_TESTS=OFF \
      -DAML_SHIM_FUZZ=OFF -DAML_SHIM_VERSION=$2 -DCMAKE_INSTALL_PREFIX=/usr &&
    cmake --build build -j \$(nproc) && strip --strip-unneeded build/aml-shim &&
    rm -rf /stage && DESTDIR=/stage cmake --install build"' sh "$ROOT" "$version" >"$log" 2>&1 ||
  fail "the build in the Debian 11 root failed"

# ---- Nothing newer than GLIBC_2.17.
newest=$(objdump -T "$ROOT/src/build/aml-shim" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' |
         sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
if [ "$(printf '%s\n%s\n' "$newest" "$MAX_GLIBC" | sort -t. -k1,1n -k2,2n | tail -1)" != "$MAX_GLIBC" ]; then
  objdump -T "$ROOT/src/build/aml-shim" | grep -E "GLIBC_2\.(1[89]|[2-9][0-9])" >&2 || true
  echo "release: the binary needs GLIBC_$newest, more than GLIBC_$MAX_GLIBC (above: the symbols)" >&2
  exit 1
fi

# ---- dist/: the binary, its sha256, the .deb.
mkdir -p dist
rm -f dist/aml-shim-* dist/aml-shim_* dist/aml_shim-*
install -m 0755 "$ROOT/src/build/aml-shim" "dist/$name"
(cd dist && sha256sum "$name" >"$name.sha256")
stage=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$stage"' EXIT
cp -a "$ROOT/stage/." "$stage/"
gzip -9n "$stage/usr/share/man/man1/aml-shim.1"
mkdir -p "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@SIZE_KB@/$size/" scripts/deb/control.in >"$stage/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$stage" "dist/aml-shim_${version}_amd64.deb" >/dev/null
wheel=$(python3 scripts/wheel.py "dist/$name" "$version" "$ROOT/stage/usr/share/man/man1/aml-shim.1" dist) ||
  { echo "release: the wheel could not be made" >&2; exit 1; }
step "dist/$name (needs GLIBC_$newest at most)"
step "dist/aml-shim_${version}_amd64.deb"
step "$wheel"
