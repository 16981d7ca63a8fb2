"""Multi-node jobs on one machine: network namespaces as nodes, real Open MPI
daemons in each (scripts/netns-cluster.sh), real PyTorch DDP over Gloo.

Every node has a decoy docker0 (172.17.0.1) listed before eth0, and every
node shares one hostname that resolves to loopback: the traps of real clusters.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

from harness import (require_namespaces, CKPT, PYTHON, SHIM, SRC, TRAIN, assert_converged, assert_resumed_once,
                     clean_env, finals, free_port, main, mpirun, recorded, require, run, slurp,
                     spawn, wait_for)

CLUSTER = "amle"
SUBNET = 42
NET = f"198.18.{SUBNET}"
SCRIPT = os.path.join(SRC, "scripts", "netns-cluster.sh")
TORCHRUN = os.path.join(SRC, "bench", "peers", "torchrun.py")  # Debian's, started
LIGHTNING_LIKE = os.path.join(SRC, "examples", "lightning_like_launcher.py")
KEYS = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR",
        "MASTER_PORT", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TF_CONFIG"]
PRINT_ENV = [PYTHON, "-c",
             "import json,os; os.write(1, (json.dumps({k: os.environ.get(k) for k in %r}) "
             "+ '\\n').encode())" % KEYS]


def node(i):
    return f"{CLUSTER}{i}"


def cluster_mpirun(hosts, *args, x=(), extra=()):
    """mpirun over the namespaces: hosts like {1: 2, 2: 2} (node: slots)."""
    agent = subprocess.run([SCRIPT, "agent", CLUSTER], stdout=subprocess.PIPE, text=True,
                           check=True).stdout.strip()
    where = ["--host", ",".join(f"{node(i)}:{n}" for i, n in hosts.items())]
    mca = [("plm_rsh_agent", agent), ("oob_tcp_if_include", f"{NET}.0/24"),
           ("btl_tcp_if_include", f"{NET}.0/24"),
           # orted (started here, unlike single-node mpirun) shares its hwloc
           # topology through shared memory mapped at a "hole" it finds in its
           # address space; now and then that lands by the stack and orted
           # crashes in hwloc_shmem_topology_write. "none" turns that off.
           ("rtc_hwloc_vmhole", "none")]
    return mpirun(sum(hosts.values()), *args, x=x, extra=where + list(extra), mca=mca)


def cluster_hydra(hosts, *args):
    """MPICH's mpiexec.hydra over the namespaces, started in node 1 (its
    proxies connect back to it over the bridge)."""
    agent = subprocess.run([SCRIPT, "agent", CLUSTER], stdout=subprocess.PIPE, text=True,
                           check=True).stdout.strip()
    where = ",".join(f"{node(i)}:{n}" for i, n in hosts.items())
    return ["ip", "netns", "exec", node(1), "mpiexec.hydra", "-launcher", "ssh",
            "-launcher-exec", agent, "-iface", "eth0", "-hosts", where,
            "-n", str(sum(hosts.values())), *args]


def ranks_env(stdout):
    """Every rank's JSON document. mpirun forwards each rank's output in the
    pieces it reads, so one rank's line may end after another's starts: find
    the objects rather than split lines (each is one atomic write)."""
    untagged = re.sub(r"\[rank \d+\] ", "", stdout)
    decoder = json.JSONDecoder()
    docs, i = [], untagged.find('{"RANK"')
    while i >= 0:
        doc, end = decoder.raw_decode(untagged, i)
        docs.append(doc)
        i = untagged.find('{"RANK"', end)
    return sorted(docs, key=lambda d: int(d["RANK"]))


class NetnsCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("mpirun", "ip", "iptables", PYTHON)
        require_namespaces("--net", "--mount", why="network namespaces")
        # Registered first: a cluster half brought up is taken down too.
        cls.addClassCleanup(subprocess.run, [SCRIPT, "down", CLUSTER], check=False)
        subprocess.run([SCRIPT, "up", CLUSTER, "3", str(SUBNET), "--decoy"], check=True)

    def ns(self, i, *cmd):
        return subprocess.run(["ip", "netns", "exec", node(i)] + list(cmd), check=True)

    def check_converged(self, stdout, world):
        return assert_converged(self, stdout, world)

    # --- PyTorch DDP across nodes -------------------------------------------------

    def test_per_process_launch_with_nothing_naming_the_master(self):
        r = run(cluster_mpirun({1: 2, 2: 2}, SHIM, "-v", "--", PYTHON, TRAIN, "--epochs", "10"),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.check_converged(r.stdout, 4)
        self.assertEqual([(int(x[2]), int(x[3])) for x in rows], [(0, 0), (1, 0), (0, 1), (1, 1)])
        # The decoy that rank 0 lists first was tried and refused by the rest.
        self.assertIn(f"(skipped 172.17.0.1: not reached by every rank): {NET}.1:", r.stderr)

    def test_per_node_launch_with_nothing_naming_the_master(self):
        r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--nproc-per-node", "2", "--",
                               PYTHON, TRAIN, "--epochs", "10"), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.check_converged(r.stdout, 4)
        self.assertEqual([(int(x[2]), int(x[3])) for x in rows], [(0, 0), (1, 0), (0, 1), (1, 1)])

    def test_azureml_multi_node_variables(self):
        # AzureML names the master by host name; the placement of 2 ranks per
        # node is not in the variables: PMIx gives it (the default), or the
        # MPI rendezvous computes it and verifies AzureML's master.
        for pmix in ("1", "0"):
            with self.subTest(AML_SHIM_PMIX=pmix):
                env = clean_env(AZ_BATCH_MASTER_NODE=f"{node(1)}:6000", AML_SHIM_PMIX=pmix)
                r = run(cluster_mpirun({1: 2, 2: 2}, SHIM, "-v", "--", PYTHON, TRAIN, "--epochs",
                                       "10", x=["AZ_BATCH_MASTER_NODE", "AML_SHIM_PMIX"]),
                        env=env, timeout=300)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.check_converged(r.stdout, 4)
                self.assertEqual([int(f[3]) for f in finals(r.stdout)], [0, 0, 1, 1])
                if pmix == "0":
                    self.assertEqual(r.stderr.count(
                        f"MPI rendezvous: rank 0's address reached by all 4 ranks: {NET}.1:6105"),
                        4, r.stderr)
                else:
                    self.assertEqual(r.stderr.count(f"master {node(1)}:6105"), 4, r.stderr)

    def test_every_placement_gets_exact_node_ranks(self):
        # Round robin (--map-by node) and uneven (3 + 1) placements: the
        # variables cannot prove NODE_RANK, so the rendezvous computes it,
        # though MASTER_ADDR is set.
        for hosts, extra, truth in [({1: 2, 2: 2}, ["--map-by", "node"], [0, 1, 0, 1]),
                                    ({1: 3, 2: 1}, [], [0, 0, 0, 1]),
                                    ({1: 2, 2: 1, 3: 1}, [], [0, 0, 1, 2])]:
            with self.subTest(hosts=hosts, extra=extra):
                r = run(cluster_mpirun(hosts, SHIM, "--master-addr", node(1), "--", *PRINT_ENV,
                                       extra=extra), timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                docs = ranks_env(r.stdout)
                self.assertEqual([int(d["NODE_RANK"]) for d in docs], truth, r.stdout)

    def test_hydra_uneven_placement_with_nothing_naming_the_master(self):
        # MPICH's libmpi.so.12 runs the rendezvous: exact nodes for 3 + 1.
        require("mpiexec.hydra")
        r = run(cluster_hydra({1: 3, 2: 1}, SHIM, "-v", "--", *PRINT_ENV), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = ranks_env(r.stdout)
        self.assertEqual([int(d["NODE_RANK"]) for d in docs], [0, 0, 0, 1], r.stdout)
        self.assertEqual([int(d["LOCAL_RANK"]) for d in docs], [0, 1, 2, 0], r.stdout)
        self.assertEqual({d["MASTER_ADDR"] for d in docs}, {f"{NET}.1"})
        self.assertEqual(len({d["MASTER_PORT"] for d in docs}), 1)
        self.assertIn("(MPICH/Intel MPI (Hydra))", r.stderr)

    def test_pytorch_ddp_across_nodes_under_hydra(self):
        require("mpiexec.hydra")
        r = run(cluster_hydra({1: 2, 2: 2}, SHIM, "--", PYTHON, TRAIN, "--epochs", "10"),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_converged(r.stdout, 4)

    def test_rendezvous_env_stops_on_a_placement_it_cannot_prove(self):
        # Without PMIx (AML_SHIM_PMIX=0) round robin cannot be proven from the
        # variables; with it (the default) every rank's node comes from PMIx.
        cmd = cluster_mpirun({1: 2, 2: 2}, SHIM, "--rendezvous", "env", "--master-addr", node(1),
                             "--", *PRINT_ENV, extra=["--map-by", "node"], x=["AML_SHIM_PMIX"])
        r = run(cmd, env=clean_env(AML_SHIM_PMIX="0"), timeout=120)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        # Every rank stops; mpirun may kill some before they print.
        self.assertIn("aml-shim: NODE_RANK cannot be proven for this job", r.stderr)
        self.assertIn("set NODE_RANK on every rank, or use --rendezvous auto", r.stderr)
        r = run(cmd, env=clean_env(AML_SHIM_PMIX="1"), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual([int(d["NODE_RANK"]) for d in ranks_env(r.stdout)], [0, 1, 0, 1])

    # --- what each rank gets ------------------------------------------------------

    def test_socket_interface_on_the_master_node_and_elsewhere(self):
        r = run(cluster_mpirun({1: 2, 2: 2}, SHIM, "-v", "--", *PRINT_ENV), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = ranks_env(r.stdout)
        self.assertEqual(len(docs), 4, r.stdout)
        for d in docs:
            self.assertEqual(d["MASTER_ADDR"], f"{NET}.1")
            self.assertEqual(d["GLOO_SOCKET_IFNAME"], "eth0")
            self.assertEqual(d["NCCL_SOCKET_IFNAME"], "=eth0")
            self.assertEqual(d["NODE_RANK"], str(int(d["RANK"]) // 2))
        # On the master's node the route to its own address is lo; the
        # interface that holds it is the answer. Elsewhere: the route's.
        self.assertIn(f"socket interface eth0: this node holds the master's address {NET}.1 "
                      "on eth0", r.stderr)
        self.assertIn(f"socket interface eth0: the route to the master {NET}.1 leaves by eth0 "
                      f"({NET}.2)", r.stderr)

    def test_user_interface_choice_is_kept(self):
        env = clean_env(GLOO_SOCKET_IFNAME="eth0", NCCL_SOCKET_IFNAME="^docker")
        r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--", *PRINT_ENV,
                               x=["GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"]), env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for d in ranks_env(r.stdout):
            self.assertEqual(d["NCCL_SOCKET_IFNAME"], "^docker")

    def test_tf_config_on_three_nodes(self):
        r = run(cluster_mpirun({1: 1, 2: 1, 3: 1}, SHIM, "--nproc-per-node", "2", "--tf-config",
                               "--ps-count", "1", "--", *PRINT_ENV), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        docs = ranks_env(r.stdout)
        self.assertEqual([int(d["RANK"]) for d in docs], list(range(6)), r.stdout)
        configs = [json.loads(d["TF_CONFIG"]) for d in docs]
        cluster = configs[0]["cluster"]
        for c in configs:
            self.assertEqual(c["cluster"], cluster)
        tasks = cluster["ps"] + cluster["worker"]
        self.assertEqual(len(cluster["ps"]), 1)
        self.assertEqual(len(cluster["worker"]), 5)
        # Each process is on its own node's address, ports distinct per host.
        hosts = [t.rsplit(":", 1)[0] for t in tasks]
        self.assertEqual(hosts, [f"{NET}.1"] * 2 + [f"{NET}.2"] * 2 + [f"{NET}.3"] * 2)
        self.assertEqual(len(set(tasks)), 6)
        self.assertEqual(configs[0]["task"], {"type": "ps", "index": 0})
        for rank in range(1, 6):
            self.assertEqual(configs[rank]["task"], {"type": "worker", "index": rank - 1})

    # --- preflight -----------------------------------------------------------------

    def test_preflight_tcp_passes_and_the_command_runs(self):
        r = run(cluster_mpirun({1: 2, 2: 2}, SHIM, "-v", "--preflight", "tcp", "--", *PRINT_ENV))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(ranks_env(r.stdout)), 4)
        # Each node's local rank 0 spoke for its node (node fan-in).
        self.assertIn("all 4 ranks reached", r.stderr)
        self.assertIn("(2 connection(s) to rank 0)", r.stderr)

    def test_preflight_tcp_names_the_node_that_cannot_reach_the_master(self):
        port = 29611
        rule = ["OUTPUT", "-p", "tcp", "-d", f"{NET}.1", "--dport", str(port), "-j", "REJECT",
                "--reject-with", "tcp-reset"]
        self.ns(2, "iptables", "-A", *rule)
        self.addCleanup(self.ns, 2, "iptables", "-D", *rule)
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "ran")
            # One shim per node (NODE_RANK proven, no MPI rendezvous) of 2 ranks.
            r = run(cluster_mpirun({1: 1, 2: 1, 3: 1}, SHIM, "--master-addr", node(1),
                                   "--master-port", str(port), "--preflight", "tcp",
                                   "--preflight-timeout", "3", "--nproc-per-node", "2", "--",
                                   "touch", marker),
                    timeout=120)
            self.assertFalse(os.path.exists(marker), "the command ran after a failed preflight")
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        # Rank 0's one report names the missing ranks...
        self.assertEqual(r.stderr.count("did not reach"), 1, r.stderr)
        self.assertIn(f"1 of 3 ranks did not reach MASTER_ADDR:MASTER_PORT={node(1)}:{port}",
                      r.stderr)
        self.assertIn(": rank 1 (each says why on its own host)", r.stderr)
        # ... and each of them says where it is and why.
        for rank in (1,):
            self.assertRegex(r.stderr, rf"aml-shim: preflight tcp: rank {rank} on \S+ "
                                       rf"\({re.escape(NET)}\.2\) cannot connect to "
                                       rf"MASTER_ADDR:MASTER_PORT={node(1)}:{port}: .*refused")

    def nccl_preflight(self, hosts, *shim_args):
        # Stand-in CUDA/NCCL (tests/fakes): the fake NCCL's root listens on
        # the address of NCCL_SOCKET_IFNAME, as NCCL's bootstrap does, so the
        # job-wide all-reduce works only if the worker got the shim's choice.
        env = clean_env(AML_SHIM_LIBCUDART=os.environ["AML_FAKE_CUDART"],
                        AML_SHIM_LIBNCCL=os.environ["AML_FAKE_NCCL"], FAKE_CUDA_DEVICES=2)
        cmd = cluster_mpirun(hosts, SHIM, "--preflight", "nccl", "--preflight-bytes", "1M",
                             *shim_args, "--", *PRINT_ENV,
                             x=["AML_SHIM_LIBCUDART", "AML_SHIM_LIBNCCL", "FAKE_CUDA_DEVICES"])
        r = run(cmd, env=env, timeout=200)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r, [l for l in r.stderr.splitlines() if l.startswith("aml-shim: preflight nccl")]

    def test_preflight_nccl_per_node_and_across_three_nodes(self):
        r, lines = self.nccl_preflight({1: 2, 2: 2, 3: 2})
        self.assertEqual(len(ranks_env(r.stdout)), 6)
        self.assertEqual(len(lines), 4, r.stderr)
        for i in range(3):
            self.assertRegex(lines[i], rf"node {i} \(\S+\): 2 GPUs, all-reduce of 1 MiB in "
                                       r"[0-9.]+ ms: busbw [0-9.]+ GB/s")
        self.assertRegex(lines[3], r"all 3 nodes, 6 GPUs, all-reduce of 1 MiB in [0-9.]+ ms: "
                                   r"busbw [0-9.]+ GB/s")

    def test_preflight_nccl_with_one_shim_per_node(self):
        r, lines = self.nccl_preflight({1: 1, 2: 1}, "--nproc-per-node", "2")
        self.assertEqual(len(ranks_env(r.stdout)), 4)
        self.assertEqual(len(lines), 3, r.stderr)
        self.assertIn("all 2 nodes, 4 GPUs", lines[2])

    # --- MPI children --------------------------------------------------------------

    def test_mpi4py_child_under_rendezvous_env(self):
        # A child that calls MPI_Init itself, the shim never having called MPI.
        code = ("from mpi4py import MPI; import os, sys; c = MPI.COMM_WORLD; "
                "sys.stdout.write(f\"{c.Get_rank()} {c.Get_size()} {os.environ['RANK']}\\n\")")
        r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--rendezvous", "env", "--master-addr",
                               node(1), "--", PYTHON, "-c", code), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = sorted(l.split() for l in r.stdout.splitlines() if l.strip())
        self.assertEqual(lines, [[str(i), "2", str(i)] for i in range(2)])

    def test_mpi4py_child_after_the_rendezvous(self):
        # The rendezvous over PMIx (no MPI_Init at all), then exec: the
        # child's own MPI_Init works (Open MPI 4.1). Over MPI
        # (AML_SHIM_PMIX=0) the child's second MPI_Init in the same process
        # now and then hangs at its end under Open MPI 4.1 (docs/world.md, "MPI
        # rendezvous"), so that path is not run here.
        code = ("from mpi4py import MPI; import os, sys; c = MPI.COMM_WORLD; "
                "sys.stdout.write(f\"{c.Get_rank()} {c.Get_size()} {os.environ['RANK']} "
                "{os.environ['NODE_RANK']}\\n\")")
        for pmix, label in (("1", "PMIx rendezvous"),):
            with self.subTest(AML_SHIM_PMIX=pmix):
                r = run(cluster_mpirun({1: 2, 2: 2}, SHIM, "-v", "--", PYTHON, "-c", code,
                                       x=["AML_SHIM_PMIX"]),
                        env=clean_env(AML_SHIM_PMIX=pmix), timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn(f"{label}: rank 0's address reached by all 4 ranks", r.stderr)
                lines = sorted(l.split() for l in r.stdout.splitlines() if l.strip())
                self.assertEqual(lines, [[str(i), "4", str(i), str(i // 2)] for i in range(4)])

    def test_rendezvous_env_takes_rank_0s_host_from_pmix_or_refuses_to_guess(self):
        cmd = cluster_mpirun({1: 1, 2: 1}, SHIM, "--rendezvous", "env", "--", *PRINT_ENV,
                             x=["AML_SHIM_PMIX"])
        r = run(cmd, env=clean_env(AML_SHIM_PMIX="1"), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The host mpirun was given for rank 0, as its PMIx server names it.
        self.assertEqual([d["MASTER_ADDR"] for d in ranks_env(r.stdout)], [node(1), node(1)])
        r = run(cmd, env=clean_env(AML_SHIM_PMIX="0"), timeout=120)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        self.assertIn("--rendezvous env forbids the rendezvous: set --master-addr or MASTER_ADDR",
                      r.stderr)


    def test_hang_on_two_nodes_names_the_stuck_rank_and_its_node(self):
        hang = os.path.join(SRC, "tests", "e2e", "scripts", "hang_ddp.py")
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            os.mkdir(f"{tmp}/marks")
            os.chmod(f"{tmp}/marks", 0o777)
            cmd = recorded(f"{tmp}/marks", "OMPI_COMM_WORLD_RANK",
                           f"{SHIM} --nproc-per-node 2 --hang-timeout 20s -- {PYTHON} {hang}")
            r = run(cluster_mpirun({1: 1, 2: 1}, "sh", "-c", cmd), timeout=240)
            shim0, shim1 = (slurp(f"{tmp}/marks/rank-{i}") for i in (0, 1))
            self.assertTrue(shim0.endswith("exit 124\n"), r.stdout + r.stderr + shim0)
            self.assertTrue(shim1.endswith("exit 124\n"), shim1)
            # Rank 2 is on the second node; the others wait in all_reduce.
            self.assertRegex(shim0, r"aml-shim:   3 ranks \(0-1,3\) \[nodes 0, 1, host [^\]]+\] "
                                    r"in all_reduce \(distributed_c10d\.py:\d+\)")
            self.assertRegex(shim0, r"aml-shim:   rank 2 \[node 1, host [^\]]+\] in main "
                                    r"\(hang_ddp\.py:\d+\)")
            self.assertIn("aml-shim: stopped: the job was hung", shim1)

    def test_max_restarts_resumes_across_two_nodes(self):
        # Rank 3 (on the second node) fails in the first attempt; both nodes'
        # ranks are started again and the checkpointing job completes.
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            env = clean_env(CKPT_DIR=tmp)
            r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--nproc-per-node", "2",
                                   "--max-restarts", "1", "--", PYTHON, CKPT, x=["CKPT_DIR"]),
                    env=env, timeout=300)
            assert_resumed_once(self, r, shims=2)
            self.assertIn("[rank 3] rank 3 resumed at epoch 2", r.stdout)

    def test_a_spare_node_takes_the_place_of_rank_zeros_bad_node(self):
        # --spares 1 on 3 nodes under mpirun: nodes 1 and 2 hold NODE_RANK 0
        # and 1, node 3 waits. Node 1's ranks fail at epoch 1 in every
        # attempt (BAD_NODE_ADDR: its address): after 2 attempts it is
        # retired, node 3 takes NODE_RANK 0 (ranks 0 and 1) and MASTER_ADDR
        # moves to it; the job ends with the weights of an undisturbed run,
        # every shim exits 0 (mpirun sees no failure).
        with tempfile.TemporaryDirectory() as alone:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=alone, FAIL_RANK="-1", MASTER_PORT=free_port()),
                    timeout=180)
        undisturbed = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
        self.assertEqual(len(undisturbed), 1, r.stdout + r.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            env = clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", FAIL_EPOCH="1",
                            BAD_NODE_ADDR=f"{NET}.1")
            r = run(cluster_mpirun({1: 1, 2: 1, 3: 1}, SHIM, "--nproc-per-node", "2",
                                   "--spares", "1", "--max-restarts", "3", "--", PYTHON, CKPT,
                                   x=["CKPT_DIR", "FAIL_RANK", "FAIL_EPOCH", "BAD_NODE_ADDR"]),
                    env=env, timeout=400)
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            self.assertIn("spare (--spares 1)", r.stderr)
            self.assertEqual(text.count("aml-shim: NODE_RANK 0 moves to rank 2's shim on"), 3,
                             text)
            self.assertIn("MASTER_ADDR moves with it", r.stderr)
            self.assertIn("rank 0 on a bad node fails", r.stdout)
            weights = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
            self.assertEqual(weights, undisturbed, text)
            self.assertNotIn("LEFTOVER", text)


    def kill_rank_zeros_shim_mid_job(self, tmp, *mpirun_extra,
                                     command=("--nproc-per-node", "2", "--", PYTHON, CKPT)):
        """3 nodes, --spares 1, under mpirun: rank 0's shim (the control
        plane's root; its ranks' ancestor) is SIGKILLed once the job trains.
        Returns mpirun's CompletedProcess."""
        # QUIET: the ranks write to $CKPT_DIR/log-R (mpirun's pipes are read
        # only at the end).
        env = clean_env(CKPT_DIR=tmp, FAIL_RANK="-1", EPOCHS="40", QUIET="1")
        p = spawn(cluster_mpirun({1: 1, 2: 1, 3: 1}, SHIM, "--spares", "1", "--max-restarts",
                                 "2", "--log-dir", f"{tmp}/logs", *command,
                                 x=["CKPT_DIR", "FAIL_RANK", "EPOCHS", "QUIET"],
                                 extra=list(mpirun_extra)),
                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(wait_for(lambda: "epoch 1 saved" in slurp(f"{tmp}/log-1")
                                     if os.path.exists(f"{tmp}/log-1") else False, 180))
            shim = int(slurp(f"{tmp}/pid-0-0"))
            while slurp(f"/proc/{shim}/comm").strip() != "aml-shim":
                shim = int(slurp(f"/proc/{shim}/stat").rsplit(")", 1)[1].split()[1])
            os.kill(shim, 9)
            out, err = p.communicate(timeout=400)
        finally:
            if p.poll() is None:
                p.kill()
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def test_open_mpi_4_with_recovery_survives_the_loss_of_rank_zeros_shim(self):
        # Open MPI 4.1 ends the job on any lost process, unless told to
        # recover: with orte_enable_recovery and without aborting on a
        # non-zero status, the heir takes the job, the spare takes NODE_RANK
        # 0, the job ends with the undisturbed weights and mpirun exits 0.
        with tempfile.TemporaryDirectory() as alone:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=alone, FAIL_RANK="-1", EPOCHS="40",
                                  MASTER_PORT=free_port()), timeout=300)
        undisturbed = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
        self.assertEqual(len(undisturbed), 1, r.stdout + r.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            r = self.kill_rank_zeros_shim_mid_job(tmp, "--mca", "orte_enable_recovery", "1",
                                                  "--mca", "orte_abort_on_non_zero_status", "0")
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            self.assertIn("takes the job as its root: 2 of 3 shims reached it", r.stderr)
            self.assertIn("aml-shim: NODE_RANK 0 moves to rank 2's shim on", r.stderr)
            self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", slurp(f"{tmp}/log-0")),
                             undisturbed, text)
            # The new root's word (term 2): the job ended well.
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual((record["exit_code"], record["term"]), (0, 2), record)

    def test_torchrun_per_node_with_a_spare_survives_the_loss_of_rank_zeros_node(self):
        # --spares with --node-launcher: torchrun on each node; rank 0's
        # node (its shim, torchrun and workers) is lost; the heir takes the
        # job, the spare's torchrun starts as NODE_RANK 0 (PET_NODE_RANK) with
        # the store on its own node (PET_MASTER_ADDR moves with it), and the
        # job ends with the undisturbed weights.
        with tempfile.TemporaryDirectory() as alone:
            r = run([SHIM, "--nproc-per-node", "4", "--", PYTHON, CKPT],
                    env=clean_env(CKPT_DIR=alone, FAIL_RANK="-1", EPOCHS="40",
                                  MASTER_PORT=free_port()), timeout=300)
        undisturbed = re.findall(r"final weights ([0-9a-f]{64})", r.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            r = self.kill_rank_zeros_shim_mid_job(
                tmp, "--mca", "orte_enable_recovery", "1", "--mca",
                "orte_abort_on_non_zero_status", "0",
                command=("--node-launcher", "--", PYTHON, TORCHRUN, "--nproc_per_node", "2",
                         CKPT))
            text = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, text)
            self.assertIn("aml-shim: NODE_RANK 0 moves to rank 2's shim on", r.stderr)
            self.assertIn("MASTER_ADDR moves with it", r.stderr)
            self.assertIn("rank 0 resumed at epoch", slurp(f"{tmp}/log-0"))
            self.assertEqual(re.findall(r"final weights ([0-9a-f]{64})", slurp(f"{tmp}/log-0")),
                             undisturbed, text)

    def test_mpirun_ending_the_job_after_rank_zeros_loss_leaves_the_heirs_record(self):
        # Without recovery, mpirun ends every process a few seconds after
        # rank 0's shim is lost, while its heir takes the job or after it
        # did: the heir holds the job's record and writes why the job ended
        # (before, every shim exited and nothing was written).
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)
            r = self.kill_rank_zeros_shim_mid_job(tmp)
            text = r.stdout + r.stderr
            self.assertNotEqual(r.returncode, 0, text)
            record = json.loads(slurp(f"{tmp}/logs/failure.json"))
            self.assertEqual(record["exit_code"], 143, record)
            self.assertRegex(record["error"], r"rank 0's shim|its heir", record)
            self.assertEqual(record["attempts"][0]["exit_code"], 125, record)
            self.assertIn("lost rank 0's shim", record["attempts"][0]["first_failure"], record)
            self.assertEqual(record["retired"][0]["shim"], 0, record)

    # --- Frameworks that start their node's processes (docs/frameworks.md) ----------

    def fan_out_digest(self):
        """aml-shim's own fan-out over the two nodes, 2 processes each: the
        weights every other way of starting the same 4 ranks must reach."""
        if not hasattr(NetnsCluster, "_fan_out"):
            r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--nproc-per-node", "2", "--",
                                   PYTHON, TRAIN, "--epochs", "10"), timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            NetnsCluster._fan_out = self.check_converged(r.stdout, 4)[0][6]
        return NetnsCluster._fan_out

    def test_torchrun_as_each_nodes_launcher_trains_as_the_fan_out(self):
        # A bare `torchrun --nproc_per_node 2 train.py` per node: its node,
        # node count and master from PET_*, nothing else.
        # (torch 1.13's torchrun spells it --nproc_per_node; 2.x takes both.)
        r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--node-launcher", "--", PYTHON, TORCHRUN,
                               "--nproc_per_node", "2", TRAIN, "--epochs", "10"), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.check_converged(r.stdout, 4)
        self.assertEqual([(int(x[2]), int(x[3])) for x in rows], [(0, 0), (1, 0), (0, 1), (1, 1)])
        self.assertEqual(rows[0][6], self.fan_out_digest())

    def test_a_launcher_that_spawns_as_lightning_does_with_mpi4py_importable(self):
        # Lightning's rules (examples/lightning_like_launcher.py): with
        # aml-shim's per-process variables it takes itself for a
        # torchelastic worker; with mpirun's it would join mpirun's world
        # of 2 (mpi4py is importable). --node-launcher gives neither.
        launcher = [PYTHON, LIGHTNING_LIKE, "--num-nodes", "2", "--devices", "2", "--",
                    PYTHON, TRAIN, "--epochs", "10"]
        trap = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--", *launcher), timeout=300)
        self.assertNotEqual(trap.returncode, 0, trap.stdout)
        self.assertIn("Lightning would take TorchElasticEnvironment", trap.stderr)
        r = run(cluster_mpirun({1: 1, 2: 1}, SHIM, "--node-launcher", "--", *launcher),
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = self.check_converged(r.stdout, 4)
        self.assertEqual(rows[0][6], self.fan_out_digest())

    def test_kubeflow_pods_started_side_by_side_are_the_whole_job(self):
        # Two pods (one per node), each `aml-shim -- python train.py` with
        # what the operator gives it: TrainJob's PET_* (the processes per
        # node from PET_NPROC_PER_NODE), and PyTorchJob 1.7's, whose own
        # RANK (the pod) and WORLD_SIZE (pods x nprocPerNode) are not read.
        port = str(free_port())
        pods = {
            "TrainJob": lambda i: {"PET_NNODES": "2", "PET_NODE_RANK": str(i),
                                   "PET_NPROC_PER_NODE": "2", "PET_MASTER_ADDR": f"{NET}.1",
                                   "PET_MASTER_PORT": port},
            "PyTorchJob": lambda i: {"PET_NNODES": "2", "PET_NODE_RANK": str(i),
                                     "PET_NPROC_PER_NODE": "2", "MASTER_ADDR": f"{NET}.1",
                                     "MASTER_PORT": port, "RANK": str(i), "WORLD_SIZE": "4",
                                     "PYTHONUNBUFFERED": "0"},
        }
        for kind, variables in pods.items():
            with self.subTest(kind):
                procs = [spawn(["ip", "netns", "exec", node(i + 1), SHIM, "--", PYTHON, TRAIN,
                                "--epochs", "10"], env=clean_env(**variables(i)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                         for i in range(2)]
                outs = [p.communicate(timeout=300) for p in procs]
                for p, (out, err) in zip(procs, outs):
                    self.assertEqual(p.returncode, 0, out.decode() + err.decode())
                stdout = "".join(o.decode() for o, _ in outs)
                rows = self.check_converged(stdout, 4)
                self.assertEqual(rows[0][6], self.fan_out_digest())
        explain = run(["ip", "netns", "exec", node(2), SHIM, "env", "--explain"],
                      env=clean_env(**pods["PyTorchJob"](1)))
        self.assertEqual(explain.returncode, 0, explain.stderr)
        self.assertIn("# world from Kubeflow (TrainJob, PyTorchJob)", explain.stdout)
        self.assertIn("describe the pods", explain.stdout)
        self.assertRegex(explain.stdout, r"RANK=2 +<- shim rank \* nproc \+ child")


class SingleNode(unittest.TestCase):
    def test_single_node_job_never_calls_mpi(self):
        # If aml-shim had called MPI_Init, mpi4py's own MPI_Init would fail.
        require("mpirun", PYTHON)
        from harness import mpirun
        code = ("from mpi4py import MPI; import sys; c = MPI.COMM_WORLD; "
                "sys.stdout.write(f\"{c.Get_rank()} {c.Get_size()}\\n\")")
        r = run(mpirun(2, SHIM, "--tf-config", "--", PYTHON, "-c", code), timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(r.stdout.split("\n")[:2]), ["0 2", "1 2"])


if __name__ == "__main__":
    main()
