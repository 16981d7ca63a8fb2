#!/bin/sh
# The Debian 13 (trixie) root of today's stack, made once and cached: Open
# MPI 5.0 (PRRTE 3, PMIx 5), torch 2.x (CPU) and mpi4py 4, for the tests that
# run aml-shim under them (tests/e2e/test_ompi5.py; about 5 minutes and
# 1.7 GB the first time). Prints the root's path. Needs root.
set -eu
root=${AML_TRIXIE_ROOT:-/var/cache/aml-shim/trixie-amd64}
"$(dirname "$0")/debian-root.sh" trixie "$root" openmpi-bin libopenmpi-dev python3-torch \
  python3-numpy python3-mpi4py iproute2 procps util-linux >&2
echo "$root"
