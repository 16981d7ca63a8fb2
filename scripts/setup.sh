#!/usr/bin/env bash
# Installs what aml-shim needs from Debian's packages. Idempotent: packages
# already present are skipped; apt shows what it downloads and its progress.
#   scripts/setup.sh          to build aml-shim (compiler, CMake, Boost, GoogleTest)
#   scripts/setup.sh --demo   and to run the demo (Open MPI, PyTorch)
#   scripts/setup.sh --tests  and to run every test (MPICH, Slurm, PMIx, rdma-core,
#                             UCX, gdb, clang, debootstrap, podman, ...)
# CUDA and NCCL are optional (under /usr/local/cuda when present) and never
# installed here.
set -euo pipefail

# (ccache in every set: a tree the demo built is not compiled again by the
# test command, which would otherwise configure it with a launcher it lacked.)
build=(
  build-essential cmake ninja-build pkg-config git ccache
  libboost-program-options-dev libgtest-dev help2man binutils
)
demo=(openmpi-bin python3 python3-torch)
tests=(
  libopenmpi-dev libpmix-dev mpich libmpich-dev
  rdma-core libibverbs-dev librdmacm-dev libucx-dev
  python3-mpi4py python3-venv
  slurm-wlm munge
  tini dumb-init hyperfine
  iproute2 iptables procps util-linux gdb
  clang libclang-rt-14-dev
  debootstrap dpkg-dev
  podman runc
  prometheus
)
case "${1:-}" in
  "") packages=("${build[@]}") ;;
  --demo) packages=("${build[@]}" "${demo[@]}") ;;
  --tests) packages=("${build[@]}" "${demo[@]}" "${tests[@]}") ;;
  *) echo "usage: scripts/setup.sh [--demo|--tests]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS
echo "setup: apt-get update"
$SUDO apt-get update -qq
# apt's own lines: what it downloads ("Need to get ..."), the disk it takes,
# and a line per package as it is unpacked and set up.
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: packages installed in $((SECONDS - start)) s"
# MPICH brings its own mpirun alternative: Open MPI's stays the default
# (the tests call MPICH as mpiexec.hydra).
if [[ -e /usr/bin/mpirun.openmpi ]] && ! mpirun --version 2>&1 | grep -q "Open MPI"; then
  $SUDO update-alternatives --set mpirun /usr/bin/mpirun.openmpi >/dev/null
  $SUDO update-alternatives --set mpi /usr/bin/mpicc.openmpi >/dev/null 2>&1 || true
fi
echo "setup: done"
