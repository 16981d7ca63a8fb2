#!/usr/bin/env bash
# Configures and builds aml-shim in build/ (Release-with-debug-info, warnings
# as errors). Usage: scripts/build.sh [--target T] [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
# --target T: only T (the demo builds aml-shim alone, not the tests).
target=()
if [[ ${1:-} == --target ]]; then
  target=(--target "$2")
  shift 2
fi
# ccache, where installed (scripts/setup.sh installs it): a build of
# sources compiled before, by any clone of the same commit (CI's clean clone),
# takes seconds. Without it, the compiler alone (an empty launcher, so that a
# build/ configured with ccache still builds after ccache is removed).
launcher=""
if command -v ccache >/dev/null; then launcher=ccache; fi
cmake -S . -B build -G Ninja -DAML_SHIM_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_C_COMPILER_LAUNCHER="$launcher" "$@" >/dev/null
if ((${#target[@]})); then
  echo "build: compiling ${target[1]} in build/ with $(nproc) jobs (about 80 s on 2 cores the first time; the tests are not built)" >&2
else
  echo "build: compiling aml-shim and its tests in build/ with $(nproc) jobs (about 4 minutes on 2 cores the first time)" >&2
fi
cmake --build build -j "$(nproc)" "${target[@]}"
