#!/usr/bin/env bash
# One command from a fresh Debian machine to a full test run: installs the
# dependencies, builds, and runs every test (unit, fuzz, end-to-end under
# real mpirun, srun, netns clusters and PyTorch) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "${AML_TEST_JOBS:-2}" "$@"
