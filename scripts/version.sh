#!/bin/bash
# The version aml-shim --version prints, one rule for every build
# (CMake's, at each build: cmake/Version.cmake; scripts/release.sh's):
#   0.1.0                        at tag v0.1.0
#   0.1.0+<commits>.g<hash>      after it (or with no tag: commits since the start)
#   ...+dirty                    with uncommitted changes to tracked files
#   0.1.0                        outside a git checkout (CMakeLists.txt's project version)
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(sed -n 's/^project(aml-shim VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "$base"
  exit 0
fi
desc=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null ||
       echo "v$base-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- || echo -dirty)")
version=${desc#v}
version=${version/-dirty/+dirty}
if [[ $version =~ ^([0-9.]+)-([0-9]+)-(g[0-9a-f]+)(.*)$ ]]; then
  version="${BASH_REMATCH[1]}+${BASH_REMATCH[2]}.${BASH_REMATCH[3]}${BASH_REMATCH[4]}"
fi
echo "$version"
