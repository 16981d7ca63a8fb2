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
cmake -S . -B build -G Ninja -DAML_SHIM_WERROR=ON "$@" >/dev/null
if ((${#target[@]})); then
  echo "build: compiling ${target[1]} in build/ with $(nproc) jobs (about 80 s on 2 cores the first time; the tests are not built)" >&2
else
  echo "build: compiling aml-shim and its tests in build/ with $(nproc) jobs (about 4 minutes on 2 cores the first time)" >&2
fi
cmake --build build -j "$(nproc)" "${target[@]}"
