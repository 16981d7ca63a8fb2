"""The release (scripts/release.sh) runs where users run it: built in a
Debian 11 root, it needs nothing newer than GLIBC_2.17, starts there, fans
out, runs as PID 1 of a fresh PID namespace with that root (a container
ENTRYPOINT, and under podman as a Debian 11 image's ENTRYPOINT), its .deb
installs there with exactly what `cmake --install` installs, and its wheel
installs with pip there and on bookworm. Without root or namespaces,
`release.sh --local` makes a wheel for this machine's glibc, and what a full
release lacks is said before any work."""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import SHIM, main, require, run, require_namespaces, wait_for

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


_released = []


def release():
    """scripts/release.sh, once for both classes of this file, after saying
    in one line what it needs and this machine lacks."""
    if not _released:
        require("debootstrap", "objdump", "dpkg-deb", "tar", "unshare", "chroot")
        if os.geteuid() != 0:
            raise AssertionError("this test needs root (debootstrap, chroot, rootful podman): "
                                 "run it with sudo")
        require_namespaces("--mount", "--pid", "--fork",
                           why="mount and PID namespaces (chroot builds)")
        r = run([os.path.join(SRC, "scripts", "release.sh")], timeout=1200)
        if r.returncode != 0:
            raise AssertionError("scripts/release.sh failed:\n" + r.stdout + r.stderr)
        _released.append(True)


class LocalRelease(unittest.TestCase):
    """The ways a newcomer makes release files without a Debian 11 root."""

    def test_a_local_wheel_needs_neither_root_nor_namespaces(self):
        # scripts/release.sh --local with neither /usr/sbin nor /sbin on PATH
        # (no debootstrap, no chroot): this checkout, built in build-local/,
        # for this machine's glibc, in a wheel pip installs here. build/ is
        # left alone (the other tests run its aml-shim meanwhile).
        env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")
        before = os.stat(SHIM)
        r = run([os.path.join(SRC, "scripts", "release.sh"), "--local"], env=env, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        after = os.stat(SHIM)
        self.assertEqual((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns),
                         "release.sh --local rebuilt build/aml-shim")
        here = tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split("."))
        wheels = glob.glob(os.path.join(SRC, "dist", "aml_shim-*-py3-none-manylinux_2_*_x86_64.whl"))
        self.assertEqual(len(wheels), 1, wheels)
        tag = tuple(int(x) for x in re.search(r"manylinux_(\d+)_(\d+)_", wheels[0]).groups())
        binary = [b for b in glob.glob(os.path.join(SRC, "dist", "aml-shim-*-linux-x86_64-glibc*"))
                  if not b.endswith(".sha256")][0]
        self.assertEqual(tag, glibc_versions(binary)[-1])  # what it needs, said in its tag
        self.assertLessEqual(tag, here)
        self.assertIn(f"release: {os.path.relpath(wheels[0], SRC)}", r.stdout)
        with tempfile.TemporaryDirectory() as venv:
            for cmd in (["python3", "-m", "venv", venv],
                        [f"{venv}/bin/pip", "install", "--no-index", "--no-cache-dir", wheels[0]]):
                r = run(cmd, env=env, timeout=300)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = run([f"{venv}/bin/aml-shim", "--nproc-per-node", "2", "--", "sh", "-c",
                     "echo rank $RANK"], env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(r.stdout.split("\n")[:2]), ["[rank 0] rank 0", "[rank 1] rank 1"])

    def test_what_the_release_lacks_is_said_before_any_work(self):
        # release.sh finds its tools in /usr/sbin whatever the PATH, so what
        # is missing is made so: in a mount namespace, /usr/sbin an empty
        # tmpfs (debootstrap and chroot gone) and the build root's disk one
        # of 8 MB; then, as a user who is not root. (A chroot cannot make
        # such a mount namespace: skipped there, saying so.)
        require_namespaces("--mount", "--propagation", "private", why="a mount namespace")
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            disk = os.path.join(tmp, "disk")
            os.mkdir(disk)
            root = os.path.join(disk, "root")
            # release.sh and what it reads first, where any user may read
            # them (the checkout may be in a folder only root can enter).
            repo = os.path.join(tmp, "repo")
            os.makedirs(os.path.join(repo, "scripts"))
            for script in ("release.sh", "version.sh"):
                shutil.copy(os.path.join(SRC, "scripts", script), os.path.join(repo, "scripts"))
            shutil.copy(os.path.join(SRC, "CMakeLists.txt"), repo)
            release = os.path.join(repo, "scripts", "release.sh")
            script = ('mount -t tmpfs -o size=8m none "$1" && mount -t tmpfs none /usr/sbin && '
                      'exec "$2"')
            r = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                     disk, release],
                    env=dict(os.environ, PATH="/usr/bin:/bin", AML_RELEASE_ROOT=root))
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertEqual(r.stdout, "")
            # (What git says of a copy that is no checkout aside.)
            said = "".join(l for l in r.stderr.splitlines(True) if l.startswith("release: "))
            self.assertEqual(said,
                             "release: debootstrap chroot not found: sudo scripts/setup.sh --tests "
                             "installs them\n"
                             f"release: 8 MB free at {disk}, the Debian 11 build root needs "
                             "about 1500 MB: free some, or set AML_RELEASE_ROOT to a disk with "
                             "room\n")
            self.assertFalse(os.path.exists(root), "work began")
            r = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", release],
                    env=dict(os.environ, PATH="/usr/bin:/bin", AML_RELEASE_ROOT=root))
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("release: needs root (debootstrap and chroot make the Debian 11 build "
                          "root): run it with sudo; or scripts/release.sh --local (no root) for "
                          "this machine's glibc\n", r.stderr)
            self.assertFalse(os.path.exists(root), "work began")


class Release(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        release()
        cls.binary = glob.glob(os.path.join(SRC, "dist", "aml-shim-*-linux-x86_64"))[0]
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
        docs = sorted("/usr/share/doc/aml-shim/docs/" + f
                      for f in os.listdir(os.path.join(SRC, "docs")) if f.endswith(".md"))
        self.assertEqual(in_deb, sorted(["/usr/bin/aml-shim", "/usr/share/doc/aml-shim/README.md",
                                         "/usr/share/doc/aml-shim/copyright",
                                         "/usr/share/man/man1/aml-shim.1.gz"] + docs))
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


def readme_containerfile(base):
    """The README's Containerfile, on `base` instead of NGC's image (no
    registry is reachable) and with the release binary's file name."""
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        recipe = re.search(r"^```dockerfile\n(.*?)^```", f.read(), re.M | re.S).group(1)
    lines = recipe.splitlines()
    assert lines[0].startswith("FROM ") and lines[1].startswith("COPY aml-shim-<version>-linux-x86_64 "), recipe
    lines[0] = "FROM " + base
    lines[1] = lines[1].replace("aml-shim-<version>-linux-x86_64", "aml-shim", 1)
    return "\n".join(lines) + "\n"


class Container(unittest.TestCase):
    """The README's container recipe, run: the release binary as the
    ENTRYPOINT of a Debian 11 image (made from the release root with
    `podman import`: no registry is reachable), under podman with runc and
    cgroupfs (crun refuses this machine's hybrid cgroups)."""
    IMAGE = "localhost/aml-shim-e2e:bullseye"
    BASE = "localhost/aml-shim-e2e-base:bullseye"

    @classmethod
    def setUpClass(cls):
        require("podman", "runc")
        release()
        binaries = glob.glob(os.path.join(SRC, "dist", "aml-shim-*-linux-x86_64"))
        cls.dir = tempfile.mkdtemp(prefix="aml-container-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        conf = os.path.join(cls.dir, "containers.conf")
        with open(conf, "w") as f:  # no RLIMIT_NOFILE podman cannot set here
            f.write("[containers]\ndefault_ulimits = []\n")
        cls.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CONTAINERS_CONF": conf}
        tar = subprocess.Popen(["tar", "-C", ROOT, "--exclude=./src", "--exclude=./stage",
                                "--exclude=./tmp/*", "-c", "."], stdout=subprocess.PIPE)
        r = subprocess.run(cls.podman_args("import", "-", cls.BASE), stdin=tar.stdout,
                           capture_output=True, text=True, env=cls.env, timeout=600)
        tar.wait()
        tar.stdout.close()
        if r.returncode != 0:
            raise AssertionError("podman import failed: " + r.stderr)
        shutil.copy(binaries[0], os.path.join(cls.dir, "aml-shim"))
        with open(os.path.join(cls.dir, "Containerfile"), "w") as f:
            f.write(readme_containerfile(cls.BASE))
        r = cls.podman("build", "-q", "-t", cls.IMAGE, "-f", os.path.join(cls.dir, "Containerfile"),
                       cls.dir, timeout=600)
        if r.returncode != 0:
            raise AssertionError("podman build failed: " + r.stderr)
        cls.addClassCleanup(cls.podman, "rmi", "-f", cls.IMAGE, cls.BASE)

    @classmethod
    def podman_args(cls, *args):
        return ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", *args]

    @classmethod
    def podman(cls, *args, timeout=120):
        return run(cls.podman_args(*args), env=cls.env, timeout=timeout)

    def container(self, *cmd, entrypoint=None):
        args = ["run", "--rm", "--network", "none"]
        if entrypoint:
            args += ["--entrypoint", json.dumps(entrypoint)]
        return self.podman(*args, self.IMAGE, *cmd)

    def test_the_commands_status_is_the_containers_and_aml_shim_is_pid_1(self):
        r = self.container("sh", "-c", 'echo "pid1=$(cat /proc/1/comm)"; exit 7')
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertIn("pid1=aml-shim", r.stdout)
        self.assertIn("first failure: rank 0", r.stderr)

    def test_podman_stop_runs_the_commands_term_handler_and_gives_143(self):
        out = tempfile.mkdtemp(dir=self.dir)
        name = "aml-shim-e2e-stop-" + os.path.basename(out)
        # The handler saves, then ends by the signal as a well-behaved
        # program does (trap reset, SIGTERM to itself): the container's
        # status is the command's, 143.
        script = ('trap "echo term > /out/term; trap - TERM; kill -TERM \\$\\$" TERM; touch /out/up; '
                  'while :; do sleep 0.1; done')
        r = self.podman("run", "-d", "--name", name, "--network", "none", "-v", f"{out}:/out",
                        self.IMAGE, "sh", "-c", script)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(self.podman, "rm", "-f", name)
        self.assertTrue(wait_for(lambda: os.path.exists(f"{out}/up"), 60), "the command did not start")
        r = self.podman("stop", "-t", "10", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.podman("inspect", "--format", "{{.State.ExitCode}}", name)
        self.assertEqual(r.stdout.strip(), "143", r.stderr)
        with open(f"{out}/term") as f:
            self.assertEqual(f.read(), "term\n")

    def test_orphans_are_reaped_as_pid_1(self):
        # Three grandchildren orphaned (their parent exits at once) end while
        # the command still runs: no zombie may be left in the container.
        script = ('for i in 1 2 3; do sh -c "sleep 0.2 &"; done; sleep 1; '
                  'echo "zombies=$(cat /proc/[0-9]*/stat | awk \'$3 == "Z"\' | wc -l)"')
        r = self.container("sh", "-c", script)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("zombies=0", r.stdout)

    def test_fan_out_in_a_container(self):
        r = self.container("sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"',
                           entrypoint=["aml-shim", "--nproc-per-node", "2", "--"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()),
                         ["[rank 0] rank 0 of 2", "[rank 1] rank 1 of 2"])


if __name__ == "__main__":
    main()
