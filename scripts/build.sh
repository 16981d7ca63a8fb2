#!/usr/bin/env bash
# Configures and builds aml-shim in build/ (Release-with-debug-info, warnings
# as errors). Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DAML_SHIM_WERROR=ON "$@" >/dev/null
echo "build: compiling aml-shim in build/ with $(nproc) jobs (about 2 minutes on 2 cores the first time)" >&2
cmake --build build -j "$(nproc)"
