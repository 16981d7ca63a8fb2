"""The release (scripts/release.sh) runs where users run it: built in a
Debian 11 root, it needs nothing newer than GLIBC_2.17, starts there, fans
out, runs as PID 1 of a fresh PID namespace with that root (a container
ENTRYPOINT), and its .deb installs there with exactly what `cmake --install`
installs."""
import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import main, require, run, require_namespaces

SRC = os.environ.get("AML_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ROOT = os.environ.get("AML_RELEASE_ROOT", "/var/cache/aml-shim/bullseye-amd64")
IN_ROOT = "/usr/local/bin/aml-shim"
# Looked up here: the commands below run with the root's own short PATH.
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"


def glibc_versions(binary):
    out = subprocess.run(["objdump", "-T", binary], capture_output=True, text=True,
                         check=True).stdout
    return sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([\d.]+)", out)})


class Release(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("debootstrap", "objdump", "dpkg-deb", "unshare", "chroot")
        if os.geteuid() != 0:
            raise AssertionError("this test needs root (debootstrap, chroot): run it with sudo")
        require_namespaces("--mount", "--pid", "--fork", why="mount and PID namespaces (chroot builds)")
        r = run([os.path.join(SRC, "scripts", "release.sh")], timeout=1200)
        if r.returncode != 0:
            raise AssertionError("scripts/release.sh failed:\n" + r.stdout + r.stderr)
        cls.binary = [p for p in glob.glob(os.path.join(SRC, "dist", "aml-shim-*-linux-x86_64"))][0]
        cls.deb = glob.glob(os.path.join(SRC, "dist", "aml-shim_*_amd64.deb"))[0]
        cls.wheel = glob.glob(os.path.join(SRC, "dist", "aml_shim-*-py3-none-manylinux2014_x86_64.whl"))[0]
        cls.version = os.path.basename(cls.binary)[len("aml-shim-"):-len("-linux-x86_64")]
        shutil.copy(cls.binary, ROOT + IN_ROOT)
        cls.addClassCleanup(os.remove, ROOT + IN_ROOT)

    def chroot(self, *cmd, env=None):
        return run([CHROOT, ROOT] + list(cmd), env=env or {"PATH": "/usr/bin:/bin"})

    def test_needs_nothing_newer_than_glibc_2_17(self):
        versions = glibc_versions(self.binary)
        self.assertTrue(versions, "no GLIBC symbol versions found")
        self.assertLessEqual(versions[-1], (2, 17), f"needs GLIBC_{versions[-1]}")
        with open(self.binary + ".sha256") as f:
            digest = f.read().split()[0]
        r = subprocess.run(["sha256sum", self.binary], capture_output=True, text=True, check=True)
        self.assertEqual(r.stdout.split()[0], digest)

    def test_starts_and_explains_in_debian_11(self):
        r = self.chroot(IN_ROOT, "--version")
        self.assertEqual((r.returncode, r.stdout), (0, f"aml-shim {self.version}\n"), r.stderr)
        r = self.chroot(IN_ROOT, "env", "--explain",
                        env={"PATH": "/usr/bin:/bin", "OMPI_COMM_WORLD_RANK": "1",
                             "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                             "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_ADDR": "10.0.0.1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("RANK=1", r.stdout)
        self.assertIn("OMPI_COMM_WORLD_RANK=1", r.stdout)

    def test_fans_out_in_debian_11(self):
        r = self.chroot(IN_ROOT, "--nproc-per-node", "2", "--", "sh", "-c", 'echo "rank $RANK"')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()), ["[rank 0] rank 0", "[rank 1] rank 1"])

    def test_is_pid_1_of_a_container_like_namespace(self):
        r = run([UNSHARE, "--pid", "--fork", "--mount-proc", "--root", ROOT, IN_ROOT, "--",
                 "sh", "-c", 'echo "pid1=$(cat /proc/1/comm)"; sleep 0.1 & exit 7'],
                env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("pid1=aml-shim", r.stdout)

    def test_the_deb_installs_what_cmake_install_installs(self):
        self.chroot("dpkg", "--purge", "aml-shim")
        self.addCleanup(self.chroot, "dpkg", "--purge", "aml-shim")
        shutil.copy(self.deb, os.path.join(ROOT, "tmp", "aml-shim.deb"))
        r = self.chroot("dpkg", "-i", "/tmp/aml-shim.deb",
                        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.chroot("/usr/bin/aml-shim", "--version")
        self.assertEqual(r.stdout, f"aml-shim {self.version}\n", r.stderr)
        listed = run(["dpkg-deb", "-c", self.deb]).stdout
        in_deb = sorted(line.split()[-1].lstrip(".") for line in listed.splitlines()
                        if not line.startswith("d"))
        self.assertEqual(in_deb, ["/usr/bin/aml-shim", "/usr/share/doc/aml-shim/README.md",
                                  "/usr/share/doc/aml-shim/copyright",
                                  "/usr/share/man/man1/aml-shim.1.gz"])
        for path in in_deb:
            self.assertTrue(os.path.exists(ROOT + path), path)
        # The same files from `cmake --install` of the release build (the
        # man page uncompressed).
        shutil.rmtree(os.path.join(ROOT, "tmp", "inst"), ignore_errors=True)
        self.addCleanup(shutil.rmtree, os.path.join(ROOT, "tmp", "inst"), True)
        r = self.chroot("cmake", "--install", "/src/build", "--prefix", "/tmp/inst/usr")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        prefix = os.path.join(ROOT, "tmp", "inst")
        installed = sorted(os.path.join(d, f)[len(prefix):]
                           for d, _, files in os.walk(prefix) for f in files)
        self.assertEqual(installed, [p.replace(".1.gz", ".1") for p in in_deb])

    def pip_round_trip(self, venv, inside):
        """pip install of the wheel into a fresh virtual environment `venv`
        (a path as `inside` sees it; `inside` runs a command there), a
        fan-out run of its aml-shim, then pip uninstall; returns what is
        left of aml-shim in it."""
        r = inside("python3", "-m", "venv", venv)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        whl = os.path.join(venv, os.path.basename(self.wheel))
        shutil.copy(self.wheel, self.host_path(whl, inside))
        r = inside(f"{venv}/bin/pip", "install", "--no-index", "--no-cache-dir", whl)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = inside(f"{venv}/bin/aml-shim", "--version")
        self.assertEqual(r.stdout, f"aml-shim {self.version}\n", r.stderr)
        r = inside(f"{venv}/bin/aml-shim", "--nproc-per-node", "2", "--", "sh", "-c",
                   'echo "rank $RANK"')
        self.assertEqual(sorted(r.stdout.splitlines()), ["[rank 0] rank 0", "[rank 1] rank 1"],
                         r.stderr)
        self.assertTrue(os.path.exists(self.host_path(f"{venv}/share/man/man1/aml-shim.1", inside)))
        r = inside(f"{venv}/bin/pip", "uninstall", "-y", "aml-shim")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        os.remove(self.host_path(whl, inside))
        top = self.host_path(venv, inside)
        return [os.path.join(d, f)[len(top):] for d, dirs, files in os.walk(top)
                for f in files + dirs if "aml-shim" in f or "aml_shim" in f]

    def host_path(self, path, inside):
        return ROOT + path if inside == self.chroot else path

    def test_the_wheel_installs_with_pip_in_debian_11_and_bookworm(self):
        # Debian 11's python3 (3.9, pip 20.3) in the release root.
        shutil.rmtree(ROOT + "/tmp/venv", ignore_errors=True)
        self.addCleanup(shutil.rmtree, ROOT + "/tmp/venv", True)
        self.assertEqual(self.pip_round_trip("/tmp/venv", self.chroot), [])
        # This machine's (bookworm's python3 and pip).
        venv = tempfile.mkdtemp(prefix="aml-wheel-")
        self.addCleanup(shutil.rmtree, venv, True)
        shutil.rmtree(venv)
        here = lambda *cmd: run(list(cmd), env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(self.pip_round_trip(venv, here), [])


if __name__ == "__main__":
    main()
