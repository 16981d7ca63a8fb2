#!/bin/bash
# What a failure's records cost (docs/control-plane.md, "Naming the culprit",
# its paragraph on a failure's records): torch 2.14 over Gloo in the forky root (scripts/forky-root.sh),
# 4 ranks on one node, rank 3 exits 1 while the others wait in all_reduce
# #6 (tests/e2e/scripts/skip_collective.py). Measured from the failing
# rank's end to the last other rank's end (aml-shim -v's lines, stamped by
# moreutils' ts), with the recorder (--hang-timeout 60, the default
# --flight-recorder auto) and without (off). Needs root.
# Usage: bench/failure_records.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
root=$(scripts/forky-root.sh)
command -v ts >/dev/null || { echo "needs ts (apt-get install moreutils)" >&2; exit 2; }
for mode in auto off; do
  for i in $(seq 1 "$runs"); do
    port=$(python3 -c "import sys; sys.path.insert(0,'tests/e2e'); import harness; print(harness.free_port())")
    out=$(USE_LIBUV=0 MASTER_PORT=$port SKIP_RANK=3 SKIP_EXITS=1 \
          AML_ROOT_BINDS="$PWD:$(dirname "$(readlink -f build/aml-shim)")" \
          timeout 200 scripts/in-root.sh "$root" "$PWD/build/aml-shim" -v --hang-timeout 60 \
          --flight-recorder "$mode" --nproc-per-node 4 python3 "$PWD/tests/e2e/scripts/skip_collective.py" \
          2>&1 | ts '%.s' || true)
    t0=$(echo "$out" | grep "rank 3 (pid .*) ended" | awk '{print $1}')
    t1=$(echo "$out" | grep "ended: signal 15" | tail -1 | awk '{print $1}')
    python3 -c "print('$mode', round($t1 - $t0, 3))"
  done
done
