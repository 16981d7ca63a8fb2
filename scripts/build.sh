#!/usr/bin/env bash
# Configures and builds aml-shim in build/ (Release-with-debug-info, warnings
# as errors). Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DAML_SHIM_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
