#!/usr/bin/env bash
# One command from a fresh Debian machine to a full test run: installs the
# dependencies, builds, and runs every test (unit, fuzz, end-to-end under
# real mpirun, srun, netns clusters, PyTorch and the Debian 11 release root)
# with ctest. Many tests need root (namespaces, tmpfs, chroot, Slurm): as a
# user, the build is yours and ctest runs under sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help)
    cat <<'USAGE'
usage: scripts/test.sh [--quick] [CTEST ARGS...]
Installs the test dependencies (scripts/setup.sh --tests), builds, and runs
every test with ctest in build/. --quick: the short tier to run before
pushing (unit, lint, fuzz and simulator tests, and one end-to-end file per
launcher: ctest -L 'unit|lint|fuzz|sim|quick'; about 3 minutes on 2 cores
once built). Other arguments
go to ctest, e.g.:
  scripts/test.sh -R e2e.test_spares     one test file
  scripts/test.sh -L unit                the unit tests (also: lint, fuzz, sim, e2e)
  scripts/test.sh -E 'e2e\.'             all but the end-to-end tests
docs/testing.md says what each covers and how long they take.
USAGE
    exit 0 ;;
esac
quick=()
if [[ ${1:-} == --quick ]]; then
  quick=(-L 'unit|lint|fuzz|sim|quick')
  shift
fi
scripts/setup.sh --tests
scripts/build.sh
cd build
status=0
# Each test's time goes to Testing/times.xml (JUnit), read back below;
# tests/resources.json lets two network-namespace clusters run at once
# (tests/CMakeLists.txt says which tests take how many of its slots).
rm -f Testing/times.xml
res=(--resource-spec-file "$PWD/../tests/resources.json")
if [[ $(id -u) -eq 0 ]]; then
  ctest --output-on-failure --output-junit Testing/times.xml "${res[@]}" \
    -j "${AML_TEST_JOBS:-2}" "${quick[@]}" "$@" || status=$?
else
  # sudo's secure_path may lack nothing, but a user's PATH lacks /usr/sbin.
  sudo env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    ctest --output-on-failure --output-junit Testing/times.xml "${res[@]}" \
    -j "${AML_TEST_JOBS:-2}" "${quick[@]}" "$@" || status=$?
  # What the tests made as root in your checkout (build/, dist/,
  # build-local/ of test_release's release.sh --local) is yours again.
  sudo chown -R "$(id -u):$(id -g)" .. 2>/dev/null || true
fi
# The 15 slowest tests of this run: where the suite's time goes
# (docs/testing.md gives its budget).
if [[ -f Testing/times.xml ]]; then
  python3 - Testing/times.xml <<'PY' || true
import sys
import xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), c.get("name")) for c in ET.parse(sys.argv[1]).iter("testcase")]
print(f"The 15 slowest of {len(cases)} tests ({sum(t for t, _ in cases):.0f} s in all):")
for t, name in sorted(cases, reverse=True)[:15]:
    print(f"  {t:8.1f} s  {name}")
PY
fi
# Each test that cannot run here (a chroot, an unprivileged container) says
# why, by name (tests/e2e/harness.py); ctest lists a file as "(Skipped)"
# only when none of its tests ran, and shows no output of a file that passed.
if grep -q "^skipped here: " Testing/Temporary/LastTest.log 2>/dev/null; then
  echo "Skipped here (not failures):" >&2
  grep "^skipped here: " Testing/Temporary/LastTest.log | sed 's/ (.*//' | sort | uniq -c >&2
fi
exit $status
