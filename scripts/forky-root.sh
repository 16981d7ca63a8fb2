#!/bin/sh
# The Debian 14 (forky) root with torch 2.14 (CPU), made once and cached:
# its Gloo ranks keep PyTorch's flight recorder (torch.distributed's
# record of recent collectives), for the tests that name a hang's culprit
# (tests/e2e/test_culprit.py; about 3 minutes and 1.6 GB the first time).
# Prints the root's path. Needs root.
set -eu
root=${AML_FORKY_ROOT:-/var/cache/aml-shim/forky-amd64}
"$(dirname "$0")/debian-root.sh" forky "$root" python3-torch python3-numpy python3-tabulate \
  openmpi-bin iproute2 procps util-linux >&2
echo "$root"
