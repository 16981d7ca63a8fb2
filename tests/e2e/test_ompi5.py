"""Today's stack (issue 20): Open MPI 5.0 (PRRTE 3, PMIx 5), torch 2.x and
mpi4py 4, in a Debian trixie root (scripts/trixie-root.sh) that runs this
checkout's aml-shim (built on bookworm), on one node and on 2 network-
namespace nodes each with its own hostname. Open MPI 5 exports no node count
and no job secret: aml-shim asks its PMIx server instead, and never calls
MPI_Init, so a command that calls MPI_Init afterwards works across nodes."""
import os
import re
import signal
import subprocess
import tempfile
import unittest

from harness import (require_namespaces, CKPT, SHIM, SRC, TRAIN, assert_converged,
                     assert_each_rank_refused, clean_env, main, recorded, require, run, slurp,
                     spawn, wait_for)
from test_preflight_door import Stranger, frame, free_port

CLUSTER = "amlo"
SUBNET = 47
NET = f"198.18.{SUBNET}"
NETNS = os.path.join(SRC, "scripts", "netns-cluster.sh")
AGENT = os.path.join(SRC, "scripts", "ompi5-netns-agent.sh")
IN_ROOT = os.path.join(SRC, "scripts", "in-root.sh")
PY = "/usr/bin/python3"  # the root's: torch 2.x, mpi4py 4
# Each line is one write that starts and ends a line: prterun forwards the
# ranks' output in the pieces it reads, one rank's after another's.
MPI4PY_CHILD = ("from mpi4py import MPI; import os; c = MPI.COMM_WORLD; "
                "s = c.allreduce(c.Get_rank() + 1); "
                "os.write(1, f'\\nmpi {c.Get_rank()}/{c.Get_size()} sum {s} "
                "NODE_RANK={os.environ[\"NODE_RANK\"]}\\n'.encode())")
SHOW = ("import os; os.write(1, ('\\n' + ' '.join(f'{k}={os.environ.get(k)}' for k in ('RANK', "
        "'LOCAL_RANK', 'NODE_RANK', 'GROUP_WORLD_SIZE', 'MASTER_ADDR')) + '\\n').encode())")


def trixie_env(env):
    """`env` for a command in the root (scripts/in-root.sh): its PATH, this
    checkout and the binary at their paths, and USE_LIBUV=0 (Debian's torch
    2.x is built without libuv; its TCPStore needs this)."""
    return dict(env, PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", USE_LIBUV="0",
                AML_ROOT_BINDS=":".join(sorted({SRC, os.path.dirname(os.path.abspath(SHIM))})))


def trixie_root():
    """The cached trixie root (scripts/trixie-root.sh makes it once)."""
    made = subprocess.run([os.path.join(SRC, "scripts", "trixie-root.sh")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    if made.returncode != 0:
        raise AssertionError("the trixie root could not be made:\n" + made.stderr)
    return made.stdout.strip()


def mpirun5(np, *args, hosts=None, extra=()):
    """Open MPI 5's mpirun in the root: one node, or the netns nodes
    `hosts` ({1: 2, 2: 2}: node index -> slots)."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]
    if hosts:
        cmd += ["--bind-to", "none", "--prtemca", "plm_ssh_agent", AGENT,
                "--prtemca", "plm_ssh_no_tree_spawn", "1",
                "--prtemca", "oob_tcp_if_include", f"{NET}.0/24",
                "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", f"{NET}.0/24",
                "--host", ",".join(f"{CLUSTER}{i}:{n}" for i, n in hosts.items())]
    else:
        cmd += ["--mca", "btl", "self,sm"]
    return cmd + list(extra) + list(args)


def lines(stdout, prefix):
    return sorted(l for l in stdout.splitlines() if l.startswith(prefix))


class OpenMpi5(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("debootstrap", "unshare", "chroot", "nsenter", "ip")
        require_namespaces("--net", "--mount", "--pid", "--fork", why="network, mount and PID namespaces")
        cls.root = trixie_root()
        cls.addClassCleanup(subprocess.run, [NETNS, "down", CLUSTER], check=False)
        subprocess.run([NETNS, "up", CLUSTER, "3", str(SUBNET)], check=True)

    def inroot(self, cmd, timeout=180, **env):
        return run([IN_ROOT, self.root] + cmd, env=trixie_env(clean_env(**env)), timeout=timeout)

    def test_the_root_has_open_mpi_5_and_torch_2(self):
        r = self.inroot(["sh", "-c", f"mpirun --version; {PY} -c 'import torch; print(torch.__version__)'"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"mpirun \(Open MPI\) 5\.")
        self.assertRegex(r.stdout, r"\n2\.\d+")

    # --- item 1: a command that calls MPI_Init ---------------------------------

    def test_an_mpi4py_command_runs_after_aml_shim_on_one_node(self):
        r = self.inroot(mpirun5(2, SHIM, "--preflight", "tcp", "--", PY, "-c", MPI4PY_CHILD))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(lines(r.stdout, "mpi "), ["mpi 0/2 sum 3 NODE_RANK=0",
                                                   "mpi 1/2 sum 3 NODE_RANK=0"])

    def test_an_mpi4py_command_runs_across_nodes_after_the_rendezvous(self):
        # Nothing names the master: the rendezvous runs, over PMIx. Before,
        # it ran over MPI and the command's MPI_Init was handed its endpoints.
        # aml-shim holds its PMIx client until the command ends: after its
        # PMIx_Finalize, PMIx 5.0.7's server (openpmix#4113) left the
        # command's MPI_Init hanging in 7 of 80 loaded runs (docs/world.md).
        for hosts in ({1: 2, 2: 2},):
            with self.subTest(hosts=hosts):
                n = sum(hosts.values())
                r = self.inroot(mpirun5(n, SHIM, "-v", "--", PY, "-c", MPI4PY_CHILD, hosts=hosts))
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                total = n * (n + 1) // 2
                nodes = [0] * hosts[1] + [1] * hosts[2]
                self.assertEqual(lines(r.stdout, "mpi "),
                                 sorted(f"mpi {i}/{n} sum {total} NODE_RANK={nodes[i]}"
                                        for i in range(n)))
                self.assertIn(f"PMIx rendezvous: rank 0's address reached by all {n} ranks: "
                              f"{NET}.1:", r.stderr)

    def test_the_command_inherits_no_descriptor_of_aml_shims_pmix_client(self):
        # libpmix opens its socket and shared-memory files without
        # close-on-exec; the command gets what it would get from mpirun.
        fds = ("import os; os.write(1, ('\\nfds ' + ' '.join(sorted(f for f in os.listdir('/proc/self/fd') "
               "if os.path.exists('/proc/self/fd/' + f) and int(f) > 2)) + '\\n').encode())")
        bare = self.inroot(mpirun5(2, PY, "-c", fds, hosts={1: 1, 2: 1}))
        self.assertEqual(bare.returncode, 0, bare.stderr)
        r = self.inroot(mpirun5(2, SHIM, "--", PY, "-c", fds, hosts={1: 1, 2: 1}))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines(r.stdout, "fds"), lines(bare.stdout, "fds"))

    # --- item 2: exact NODE_RANK for any placement -----------------------------

    def test_every_placement_gets_exact_node_ranks(self):
        cases = [
            # (hosts, mpirun options, np, node of each rank)
            ({1: 2, 2: 2}, [], 4, [0, 0, 1, 1]),
            ({1: 2, 2: 2}, ["--map-by", "node"], 4, [0, 1, 0, 1]),
            ({1: 3, 2: 1}, [], 4, [0, 0, 0, 1]),
            ({1: 2, 2: 2}, ["--map-by", "ppr:1:node"], 2, [0, 1]),
        ]
        for hosts, opts, n, nodes in cases:
            for mode in ("env", "auto"):
                with self.subTest(hosts=hosts, opts=opts, rendezvous=mode):
                    r = self.inroot(mpirun5(n, SHIM, "--rendezvous", mode, "--", PY, "-c", SHOW,
                                            hosts=hosts, extra=opts))
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    got = lines(r.stdout, "RANK=")
                    self.assertEqual(len(got), n, r.stdout + r.stderr)
                    for line in got:
                        rank = int(re.search(r"^RANK=(\d+)", line).group(1))
                        self.assertIn(f"NODE_RANK={nodes[rank]} GROUP_WORLD_SIZE=2", line)
                        # --rendezvous env: rank 0's host as PMIx names it;
                        # auto: the address every rank reached.
                        self.assertTrue(line.endswith("MASTER_ADDR=" + (
                            f"{CLUSTER}1" if mode == "env" else f"{NET}.1")), line)

    # --- item 3: the preflight's secret ------------------------------------------

    def test_the_preflight_secret_comes_from_pmix_and_a_stranger_is_refused(self):
        port = free_port()
        forged = frame(b"aml-shim-preflight-3 1 2 evil-host 6.6.6.6 n1 -")
        shim = (f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then sleep 1; fi; exec {SHIM} -v '
                f'--master-addr 127.0.0.1 --master-port {port} --preflight tcp '
                f'--preflight-timeout 20 -- sh -c "echo ran-\\$RANK"')
        stranger = Stranger(port, lambda s: s.sendall(forged), count=5)
        stranger.start()
        try:
            r = self.inroot(mpirun5(2, "sh", "-c", shim))
        finally:
            stranger.close()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(r.stdout.split()), ["ran-0", "ran-1"], r.stderr)
        self.assertEqual(r.stderr.count(
            "preflight: hellos carry a digest of rank 0's random token (sent over PMIx only)"), 2,
            r.stderr)

    # --- torch 2.x: DDP across nodes -----------------------------------------------

    def test_pytorch_ddp_across_nodes(self):
        r = self.inroot(mpirun5(4, SHIM, "--", PY, TRAIN, "--epochs", "10", hosts={1: 2, 2: 2}),
                        timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        assert_converged(self, r.stdout, 4)

    def spare_job(self, victim, daemon=False):
        """3 nodes, one shim each, the third a spare, under prterun
        --enable-recovery; mid-job the shim whose ranks include `victim` is
        SIGKILLed (its keeper ends its ranks), or with `daemon` the prted
        above it. Returns prterun's status, the output, and an undisturbed
        run's final weights."""
        with tempfile.TemporaryDirectory() as alone:
            r = self.inroot([SHIM, "--nproc-per-node", "4", "--", PY, CKPT], CKPT_DIR=alone,
                            FAIL_RANK="-1", EPOCHS="8", MASTER_PORT=str(free_port()))
        undisturbed = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
        self.assertEqual(len(undisturbed), 1, r.stdout + r.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            cmd = mpirun5(3, SHIM, "--nproc-per-node", "2", "--spares", "1", "--max-restarts",
                          "2", "--", PY, CKPT, hosts={1: 1, 2: 1, 3: 1},
                          extra=["--enable-recovery", "-x", "CKPT_DIR", "-x", "FAIL_RANK",
                                 "-x", "EPOCHS", "-x", "USE_LIBUV"])
            with open(f"{tmp}/out", "w") as out:
                p = spawn([IN_ROOT, self.root] + cmd, stdout=out, stderr=subprocess.STDOUT,
                          env=trixie_env(clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", EPOCHS="8")))
            self.addCleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
            self.assertTrue(wait_for(lambda: "rank 2 epoch 1 saved" in slurp(f"{tmp}/out"), 240),
                            slurp(f"{tmp}/out"))
            pid = int(slurp(f"{tmp}/pid-0-{victim}"))
            for _ in range(2 if daemon else 1):  # the rank's shim (and its prted)
                pid = int(slurp(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[1])
            os.kill(pid, signal.SIGKILL)
            p.wait(timeout=300)
            text = slurp(f"{tmp}/out")
        return p.returncode, text, undisturbed

    def test_a_spare_takes_a_killed_shims_place_under_prterun_enable_recovery(self):
        # Open MPI 5's prterun ends the whole job when one of its processes
        # dies, unless --enable-recovery: then the others run on (and
        # prterun exits 0). The shim of NODE_RANK 1 is lost: rank 0 retires
        # it, the spare takes NODE_RANK 1, and the job ends with the weights
        # of an undisturbed run.
        code, text, undisturbed = self.spare_job(victim=2)
        self.assertEqual(code, 0, text)
        self.assertIn("lost: the control plane lost rank 1's shim on", text)
        self.assertIn(f"aml-shim: NODE_RANK 1 moves to rank 2's shim on {CLUSTER}3", text)
        self.assertRegex(text, r"rank 2 resumed at epoch [1-7]")
        self.assertRegex(text, r"rank 3 epoch 7 saved")
        self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", text), undisturbed, text)
        self.assertNotIn("LEFTOVER", text)

    def test_a_new_root_takes_the_job_when_rank_zeros_shim_is_lost_under_prterun(self):
        # Rank 0's shim is lost: its heir takes the job (docs/control-plane.md,
        # "A new root"), the spare takes NODE_RANK 0 and MASTER_ADDR moves to
        # it; the job ends with the undisturbed weights, prterun with 0.
        code, text, undisturbed = self.spare_job(victim=0)
        self.assertEqual(code, 0, text)
        # The heir is the root's first child: whichever shim linked first.
        self.assertRegex(text, r"rank [12]'s shim on \S+ takes the job as its root: 2 of 3 "
                               r"shims reached it")
        self.assertIn(f"aml-shim: NODE_RANK 0 moves to rank 2's shim on {CLUSTER}3", text)
        self.assertIn("MASTER_ADDR moves with it", text)
        self.assertRegex(text, r"rank 0 resumed at epoch [1-7]")
        self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", text), undisturbed, text)
        self.assertNotIn("LEFTOVER", text)

    def test_a_lost_prted_ends_the_job_even_with_enable_recovery(self):
        # The loss of a whole node (its prted SIGKILLed, and with it the
        # shim's launcher) is more than --enable-recovery survives: PRRTE
        # ends the job ("We cannot recover from this failure"), and prterun
        # still exits 0. The shim whose prted is gone ends its ranks (what
        # it says goes through that prted: prterun may not show it); no
        # spare takes its place (docs/control-plane.md).
        code, text, _ = self.spare_job(victim=2, daemon=True)
        self.assertEqual(code, 0, text)
        self.assertIn("PRTE has lost communication with a remote daemon", text)
        self.assertNotIn("NODE_RANK 1 moves", text)
        self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", text), [], text)

    # --- item 6: what each rank did, not what prterun forwarded ------------------

    def test_bad_environment_stops_every_rank(self):
        with tempfile.TemporaryDirectory() as marks:
            cmd = recorded(marks, "OMPI_COMM_WORLD_RANK",
                           f"{SHIM} -- touch {marks}/ran-$OMPI_COMM_WORLD_RANK")
            r = self.inroot(mpirun5(2, "sh", "-c", cmd, extra=["-x", "AZ_BATCH_MASTER_NODE"]),
                            AZ_BATCH_MASTER_NODE="10.0.0.4:notaport")
            self.assertEqual(r.returncode, 0, r.stderr)  # each wrapper exits 0
            assert_each_rank_refused(self, marks, (0, 1),
                                     "aml-shim: AZ_BATCH_MASTER_NODE='10.0.0.4:notaport' has a "
                                     "bad port 'notaport' (expected 1..65535)")

if __name__ == "__main__":
    main()
