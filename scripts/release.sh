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
# <version> is `git describe` of the checkout: 0.1.0 at tag v0.1.0, else
# 0.1.0+<commits>.g<hash> (+dirty for uncommitted changes).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
ROOT=${AML_RELEASE_ROOT:-/var/cache/aml-shim/bullseye-amd64}
MAX_GLIBC=2.17
log=$(mktemp)
trap 'rm -f "$log"' EXIT
step() { echo "release: $*"; }
fail() { echo "release: $1 (log: last lines below)" >&2; tail -20 "$log" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "release: needs root (debootstrap, chroot); run it with sudo" >&2; exit 1; }

base=$(sed -n 's/^project(aml-shim VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
desc=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null ||
       echo "v$base-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)")
version=${desc#v}
version=${version/-dirty/+dirty}
if [[ $version =~ ^([0-9.]+)-([0-9]+)-(g[0-9a-f]+)(.*)$ ]]; then
  version="${BASH_REMATCH[1]}+${BASH_REMATCH[2]}.${BASH_REMATCH[3]}${BASH_REMATCH[4]}"
fi
name=aml-shim-$version-linux-x86_64

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
