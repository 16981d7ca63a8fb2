"""--preflight nccl: without a GPU it fails cleanly, naming what is missing;
with stand-in libraries (tests/fakes: "device" memory in host RAM, an NCCL
that really all-reduces over TCP) the whole path runs under real mpirun:
unique ids over the preflight's connections, the worker process, the
correctness check, the bandwidth report, --min-busbw, timeouts, and rank 0
stopping every rank at the first failure."""
import os
import signal
import subprocess
import unittest

from harness import SHIM, clean_env, free_port, main, mpirun, require, run, spawn, wait_for

FAKE_CUDART = os.environ.get("AML_FAKE_CUDART", "")
FAKE_NCCL = os.environ.get("AML_FAKE_NCCL", "")
RAN = "command ran"


# Marks this test's processes, so that the check for leftover workers does
# not see another test's (ctest runs tests in parallel).
TAG = f"AML_TEST_TAG={os.getpid()}"


def fake_env(**extra):
    return clean_env(AML_SHIM_LIBCUDART=FAKE_CUDART, AML_SHIM_LIBNCCL=FAKE_NCCL,
                     AML_TEST_TAG=os.getpid(), **extra)


def shim_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("aml-shim: ")]


def workers_alive():
    """NCCL worker processes of this test still running."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if b"__nccl-worker" in cmdline and TAG.encode() in environ:
            alive.append(pid)
    return alive


class WithoutAGpu(unittest.TestCase):
    def test_this_machine_says_what_is_missing_and_never_runs_the_command(self):
        # Whatever this host lacks (a CUDA runtime, the driver, a GPU, NCCL),
        # the message names it, and exit is 125.
        r = run([SHIM, "--preflight", "nccl", "--", "echo", RAN])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertNotIn(RAN, r.stdout)
        lines = shim_lines(r.stderr)
        self.assertTrue(lines, r.stderr)
        self.assertTrue(lines[0].startswith("aml-shim: preflight nccl: rank 0 on "), lines[0])
        self.assertTrue(any(w in lines[0] for w in (
            "a CUDA runtime was not found", "no NVIDIA driver on this host",
            "no usable GPU", "NCCL was not found")), lines[0])

    def test_missing_libraries_are_named_with_the_variable_that_fixes_them(self):
        r = run([SHIM, "--preflight", "all", "--", "echo", RAN],
                env=clean_env(AML_SHIM_LIBCUDART="/nonexistent/libcudart.so",
                              AML_SHIM_LIBNCCL="/nonexistent/libnccl.so.2"))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertNotIn(RAN, r.stdout)
        # Every library's variable follows one rule: a path that cannot be
        # read is refused before anything else happens.
        self.assertEqual(shim_lines(r.stderr),
                         ["aml-shim: AML_SHIM_LIBCUDART='/nonexistent/libcudart.so': "
                          "No such file or directory"])
        r = run([SHIM, "--preflight", "all", "--", "echo", RAN],
                env=clean_env(AML_SHIM_LIBCUDART="libnothere.so.13",
                              AML_SHIM_LIBNCCL="libnothere.so.2"))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertNotIn(RAN, r.stdout)
        msg = shim_lines(r.stderr)[0]
        self.assertIn("AML_SHIM_LIBCUDART='libnothere.so.13' cannot be loaded: libnothere.so.13", msg)
        self.assertIn("AML_SHIM_LIBNCCL='libnothere.so.2' cannot be loaded: libnothere.so.2", msg)

    def test_no_driver_and_no_device(self):
        r = run([SHIM, "--preflight", "nccl", "--", "echo", RAN], env=fake_env(FAKE_CUDA_DRIVER=0))
        self.assertEqual(r.returncode, 125)
        self.assertIn("no NVIDIA driver on this host", r.stderr)
        r = run([SHIM, "--preflight", "nccl", "--", "echo", RAN], env=fake_env(FAKE_CUDA_DEVICES=0))
        self.assertEqual(r.returncode, 125)
        self.assertIn("no usable GPU: cudaGetDeviceCount: no CUDA-capable device is detected",
                      r.stderr)
        self.assertNotIn(RAN, r.stdout)

    def test_a_crash_while_loading_cuda_is_reported_with_its_signal(self):
        # The worker is a process: a driver that crashes takes only it down.
        r = run([SHIM, "--preflight", "nccl", "--", "echo", RAN],
                env=fake_env(FAKE_CUDA_DEVICES=1, FAKE_CUDA_CRASH=1))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertNotIn(RAN, r.stdout)
        self.assertIn("aml-shim: preflight nccl: rank 0 on ", r.stderr)
        self.assertIn("the NCCL worker was killed by signal 6 (SIGABRT) during loading CUDA and "
                      "NCCL", r.stderr)
        self.assertEqual(workers_alive(), [])


class WithStandInGpus(unittest.TestCase):
    def test_world_of_one_reports_its_bandwidth_and_runs_the_command(self):
        r = run([SHIM, "--preflight", "nccl", "--preflight-bytes", "8M", "--", "echo", RAN],
                env=fake_env(FAKE_CUDA_DEVICES=1))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), RAN)
        lines = shim_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^aml-shim: preflight nccl: node 0 \(\S+\): 1 GPU, "
                         r"all-reduce of 8 MiB in [0-9.]+ ms: algbw [0-9.]+ GB/s "
                         r"\(one GPU: no bus bandwidth\)$")
        self.assertEqual(workers_alive(), [])

    def test_per_node_launcher_drives_all_its_gpus_from_one_worker(self):
        r = run([SHIM, "--nproc-per-node", "gpu", "--preflight", "nccl", "--preflight-bytes", "4M",
                 "--", "sh", "-c", "echo rank $RANK"],
                env=fake_env(FAKE_CUDA_DEVICES=4, CUDA_VISIBLE_DEVICES="0,1,2,3"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.split("\n")[:-1]),
                         [f"[rank {i}] rank {i}" for i in range(4)])
        self.assertRegex(r.stderr, r"preflight nccl: node 0 \(\S+\): 4 GPUs, all-reduce of 4 MiB "
                         r"in [0-9.]+ ms: busbw [0-9.]+ GB/s, algbw [0-9.]+ GB/s")

    def test_a_torch_environment_of_two_nodes_gets_a_job_wide_all_reduce(self):
        # A torch environment (as torchrun exports it) for 2 nodes of 1 GPU:
        # rank 0 learns the job spans 2 nodes from GROUP_WORLD_SIZE, so it
        # makes the job's NCCL id (before, it thought "one node" and failed).
        port = free_port()
        procs = [spawn([SHIM, "--preflight", "nccl", "--preflight-bytes", "1M", "--", "echo", RAN],
                       env=fake_env(FAKE_CUDA_DEVICES=1, RANK=r, WORLD_SIZE=2, LOCAL_RANK=0,
                                    LOCAL_WORLD_SIZE=1, GROUP_RANK=r, GROUP_WORLD_SIZE=2,
                                    MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                    NCCL_SOCKET_IFNAME="lo", GLOO_SOCKET_IFNAME="lo"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in (0, 1)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, outs)
            self.assertEqual(out.strip(), RAN)
        self.assertIn("preflight nccl: all 2 nodes, 2 GPUs, all-reduce", outs[0][1])
        self.assertEqual(workers_alive(), [])

    def mpirun_shim(self, np, shim_args, env_extra, command=("sh", "-c", "echo ran $RANK")):
        require("mpirun")
        env = fake_env(**env_extra)
        names = ["AML_SHIM_LIBCUDART", "AML_SHIM_LIBNCCL", "AML_TEST_TAG"] + list(env_extra)
        cmd = mpirun(np, SHIM, *shim_args, "--preflight-bytes", "2M", "--", *command, x=names)
        return run(cmd, env=env, timeout=200)

    def test_four_ranks_under_mpirun_one_report_from_rank_zero(self):
        r = self.mpirun_shim(4, ["--preflight", "all"], {"FAKE_CUDA_DEVICES": 4})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.split()), sorted("ran ran ran ran 0 1 2 3".split()))
        lines = shim_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"node 0 \(\S+\): 4 GPUs, all-reduce of 2 MiB in [0-9.]+ ms: "
                         r"busbw [0-9.]+ GB/s")
        self.assertEqual(workers_alive(), [])

    def test_a_wrong_sum_fails_every_rank_at_once_and_names_the_gpu(self):
        # Rank 2's sums are off by one. The others would wait in the next
        # all-reduce until --preflight-timeout (600 s here); rank 0 stops
        # them instead, so this test finishing at all is the point.
        r = self.mpirun_shim(4, ["--preflight", "nccl", "--preflight-timeout", "600"],
                             {"FAKE_CUDA_DEVICES": 4, "FAKE_NCCL_CORRUPT_RANK": 2})
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("ran", r.stdout)
        lines = shim_lines(r.stderr)
        self.assertIn("aml-shim: preflight nccl: rank 2 on ", lines[0])
        self.assertRegex(lines[0], r"node: the node all-reduce gave a wrong result on GPU 2 "
                         r"\(0000:28:00.0\) \(rank 2 of 4\): element \d+ is 11.000000, "
                         r"expected 10.000000")
        self.assertIn("had not finished when rank 0 stopped the preflight", lines[1])
        self.assertEqual(len(lines), 2, r.stderr)  # one report, from rank 0
        self.assertEqual(workers_alive(), [])

    def test_a_hung_init_is_bounded_and_names_the_phase(self):
        r = self.mpirun_shim(2, ["--preflight", "nccl", "--preflight-timeout", "3"],
                             {"FAKE_CUDA_DEVICES": 2, "FAKE_NCCL_HANG_RANK": 1})
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("ran", r.stdout)
        # Every rank of a hung collective waits: all are listed, with the phase.
        lines = shim_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^aml-shim: preflight nccl: ranks 0, 1 on \S+: the NCCL worker "
                         r"timed out during node init \(--preflight-timeout\)$")
        self.assertEqual(workers_alive(), [])

    def test_the_worker_dies_with_its_shim(self):
        # A shim killed during the preflight (mpirun's SIGKILL, the OOM killer)
        # must not leave its worker holding the GPU. The worker hangs in init.
        for sig in (signal.SIGKILL, signal.SIGTERM):
            with self.subTest(signal=sig.name):
                shim = subprocess.Popen(
                    [SHIM, "--preflight", "nccl", "--preflight-timeout", "600", "--", "true"],
                    env=fake_env(FAKE_CUDA_DEVICES=1, FAKE_NCCL_HANG_RANK=0),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    self.assertTrue(wait_for(lambda: workers_alive() != []), "no worker started")
                    shim.send_signal(sig)
                    shim.wait(timeout=30)
                    self.assertTrue(wait_for(lambda: workers_alive() == []),
                                    f"worker outlived its shim: {workers_alive()}")
                finally:
                    shim.kill()
                    shim.wait()

    def test_a_slow_node_under_min_busbw_is_named(self):
        # 300 ms per 2 MiB all-reduce is ~0.007 GB/s; the floor is 0.05.
        r = self.mpirun_shim(2, ["--preflight", "nccl", "--min-busbw", "0.05"],
                             {"FAKE_CUDA_DEVICES": 2, "FAKE_NCCL_SLOW_RANK": 1,
                              "FAKE_NCCL_SLOW_MS": 300})
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("ran", r.stdout)
        lines = shim_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"preflight nccl: node 0 \(\S+\): 2 GPUs, .* busbw [0-9.]+ "
                         r"GB/s, algbw [0-9.]+ GB/s -- under --min-busbw 0.05 GB/s$")

    def test_more_processes_than_gpus_is_refused_before_nccl_starts(self):
        r = self.mpirun_shim(3, ["--preflight", "nccl"], {"FAKE_CUDA_DEVICES": 2})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("rank 2 on ", r.stderr)
        self.assertIn("LOCAL_RANK 2 takes GPU 2, but CUDA sees 2 GPUs: more processes per node "
                      "than GPUs", r.stderr)

    def test_different_nccl_versions_are_named_before_any_hang(self):
        require("mpirun")
        env = fake_env(FAKE_CUDA_DEVICES=2)
        script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export FAKE_NCCL_VERSION=22703; fi; '
                  f'exec {SHIM} --preflight nccl -- echo ran')
        cmd = mpirun(2, "sh", "-c", script,
                     x=["AML_SHIM_LIBCUDART", "AML_SHIM_LIBNCCL", "FAKE_CUDA_DEVICES"])
        r = run(cmd, env=env, timeout=200)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the ranks load different NCCL versions (NCCL refuses to mix them): "
                      "2.27.3 on 1@", r.stderr)


if __name__ == "__main__":
    main()
