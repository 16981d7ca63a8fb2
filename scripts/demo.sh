#!/usr/bin/env bash
# One command from a fresh Debian machine to a real distributed run: installs
# the dependencies (on a minimal Debian 12 with git about 340 MB to download and 1.5 GB
# on disk, mostly PyTorch and Open MPI: README.md, "What the two commands
# install and take"), builds aml-shim, and trains a small PyTorch DDP model over Gloo
# with 4 ranks started by mpirun, each rank's environment written by aml-shim.
# Usage: scripts/demo.sh [NP]
set -euo pipefail
cd "$(dirname "$0")/.."
np=${1:-4}
scripts/setup.sh --demo
# A log of its own: another user on the machine may have run the demo too.
log=$(mktemp "${TMPDIR:-/tmp}/aml-shim-build.XXXXXX")
echo "demo: building aml-shim alone, not its tests (about 80 s on 2 cores the first time; log: $log)"
if ! scripts/build.sh --target aml-shim >"$log" 2>&1; then
  tail -30 "$log" >&2
  echo "demo: the build failed; the whole log is $log" >&2
  exit 1
fi
root_flags=()
if [[ $(id -u) -eq 0 ]]; then root_flags=(--allow-run-as-root); fi
cmd=(mpirun "${root_flags[@]}" --oversubscribe -np "$np"
     build/aml-shim -- /usr/bin/python3 examples/train_ddp.py)
echo "demo: ${cmd[*]}"
"${cmd[@]}"
