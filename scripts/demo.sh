#!/usr/bin/env bash
# One command from a fresh Debian machine to a real distributed run: installs
# the dependencies, builds aml-shim, and trains a small PyTorch DDP model over
# Gloo with 4 ranks started by mpirun, each rank's environment written by
# aml-shim. Usage: scripts/demo.sh [NP]
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-4}
scripts/setup.sh
scripts/build.sh
root_flags=()
if [[ $(id -u) -eq 0 ]]; then root_flags=(--allow-run-as-root); fi
set -x
mpirun "${root_flags[@]}" --oversubscribe -np "$np" \
  build/aml-shim -- /usr/bin/python3 examples/train_ddp.py
