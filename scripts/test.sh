#!/usr/bin/env bash
# One command from a fresh Debian machine to a full test run: installs the
# dependencies, builds, and runs every test (unit, fuzz, end-to-end under
# real mpirun, srun, netns clusters, PyTorch and the Debian 11 release root)
# with ctest. Many tests need root (namespaces, tmpfs, chroot, Slurm): as a
# user, the build is yours and ctest runs under sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
scripts/build.sh
cd build
if [[ $(id -u) -eq 0 ]]; then
  ctest --output-on-failure -j "${AML_TEST_JOBS:-2}" "$@"
else
  # sudo's secure_path may lack nothing, but a user's PATH lacks /usr/sbin.
  status=0
  sudo env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    ctest --output-on-failure -j "${AML_TEST_JOBS:-2}" "$@" || status=$?
  sudo chown -R "$(id -u):$(id -g)" . ../dist 2>/dev/null || true
  exit $status
fi
