"""--metrics-addr (docs/metrics.md): every shim serves its metrics in
Prometheus' text format, which Debian's promtool accepts; rank 0's shim adds
the job's; a bad address or a port in use stops the shim before anything
runs; hostile clients on the port harm neither the shim nor the job."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

from harness import (SHIM, clean_env, free_port, main, mpirun, require, run, slurp, spawn,
                     wait_for)


def scrape(port, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def scrape_when_up(port, until=lambda text: True, timeout=60):
    """The metrics once the shim serves them and `until` holds."""
    got = {}

    def ready():
        try:
            got["text"] = scrape(port)[2]
        except OSError:
            return False
        return until(got["text"])

    if not wait_for(ready, timeout):
        raise AssertionError(f"no metrics on port {port} within {timeout} s: {got.get('text')}")
    return got["text"]


def value(text, name, **labels):
    """The sample's value, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pat = "^" + re.escape(name) + (r"\{" + re.escape(want) + r"\}" if want else "") + r" (\S+)$"
    m = re.search(pat, text, re.M)
    return float(m.group(1)) if m else None


def promtool_accepts(test, text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    test.assertEqual(r.returncode, 0, r.stdout + r.stderr + "\n" + text)


class Metrics(unittest.TestCase):
    def setUp(self):
        require("promtool", "mpirun")

    def test_a_shim_serves_its_ranks_and_promtool_accepts_them(self):
        port = free_port()
        with tempfile.TemporaryDirectory() as tmp:
            go = os.path.join(tmp, "go")
            armed = os.path.join(tmp, "armed")
            # Rank 1 ends with 3 once told; rank 0 ignores SIGTERM, so the
            # shim waits --grace for it and still answers meanwhile. Rank 1
            # is told only once rank 0 ignores SIGTERM (in a CI run, a shell
            # slow to start was ended by it before its trap: the shim, its
            # ranks gone, ended with its metrics before they were scraped).
            p = spawn([SHIM, "--metrics-addr", f"127.0.0.1:{port}", "--nproc-per-node", "2",
                       "--grace", "20s", "--", "sh", "-c",
                       f'echo up; if [ "$RANK" = 1 ]; then while [ ! -e {go} ]; do sleep 0.1; '
                       f"done; exit 3; fi; trap '' TERM; : > {armed}; sleep 30"],
                      env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.addCleanup(p.kill)
            text = scrape_when_up(port, lambda t: 'aml_shim_rank_running{rank="1"} 1' in t)
            self.assertTrue(wait_for(lambda: os.path.exists(armed), 60), "rank 0 never ran")
            open(go, "w").close()
            ended = scrape_when_up(port, lambda t: 'aml_shim_rank_exit_code{rank="1"} 3' in t)
        promtool_accepts(self, text)
        promtool_accepts(self, ended)
        self.assertEqual(value(text, "aml_shim_node_state", state="running"), 1, text)
        self.assertEqual(value(ended, "aml_shim_node_state", state="terminating"), 1, ended)
        self.assertEqual(value(ended, "aml_shim_rank_running", rank="0"), 1, ended)
        self.assertEqual(value(text, "aml_shim_attempt"), 1)
        self.assertEqual(value(text, "aml_shim_info", host=os.uname().nodename, node_rank="0",
                               version=re.search(r'version="([^"]+)"', text).group(1)), 1)
        status, kind, _ = scrape(port)
        self.assertEqual((status, kind), (200, "text/plain; version=0.0.4; charset=utf-8"))
        with self.assertRaises(urllib.error.HTTPError) as e:
            scrape(port, "/")
        self.assertEqual(e.exception.code, 404)
        # Stopped as a launcher would, twice (rank 0 ignores the first).
        p.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3)  # rank 1's: the first failure

    def test_rank_zeros_shim_adds_the_jobs_state_and_a_member_its_heartbeat(self):
        ports = [free_port(), free_port()]
        # Two shims side by side under mpirun, a port each.
        shim = (f'P=$P0; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && P=$P1; exec {SHIM} --hang-timeout 60s '
                f'--metrics-addr 127.0.0.1:$P -- sh -c "echo up; sleep 8"')
        cmd = mpirun(2, "sh", "-c", shim, x=["P0", "P1"])
        r = {}
        t = threading.Thread(target=lambda: r.update(
            p=run(cmd, env=clean_env(MASTER_PORT=str(free_port()), P0=str(ports[0]),
                                     P1=str(ports[1])), timeout=120)))
        t.start()
        root = scrape_when_up(ports[0], lambda t: "aml_shim_job_shims" in t)
        member = scrape_when_up(ports[1], lambda t: "aml_shim_heartbeat_age_seconds" in t)
        t.join()
        self.assertEqual(r["p"].returncode, 0, r["p"].stdout + r["p"].stderr)
        for text in (root, member):
            promtool_accepts(self, text)
            self.assertEqual(value(text, "aml_shim_job_state", state="running"), 1, text)
        self.assertEqual(value(root, "aml_shim_job_shims"), 2, root)
        self.assertEqual(value(root, "aml_shim_job_restarts_total"), 0, root)
        self.assertIsNone(value(member, "aml_shim_job_shims"), member)
        self.assertLess(value(member, "aml_shim_heartbeat_age_seconds"), 10, member)

    def test_a_bad_address_or_a_port_in_use_runs_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            mark = os.path.join(tmp, "ran")
            for addr, said in (("9400", "--metrics-addr '9400' has no port"),
                               ("gpu01:9400", "the host must be a numeric address"),
                               ("127.0.0.1:99999", "--metrics-addr")):
                r = run([SHIM, "--metrics-addr", addr, "--", "touch", mark], env=clean_env())
                self.assertEqual(r.returncode, 125, r.stderr)
                self.assertIn(said, r.stderr)
                self.assertFalse(os.path.exists(mark))
            with socket.socket() as held:
                held.bind(("127.0.0.1", 0))
                held.listen()
                port = held.getsockname()[1]
                r = run([SHIM, "--metrics-addr", f"127.0.0.1:{port}", "--", "touch", mark],
                        env=clean_env())
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn(f"--metrics-addr 127.0.0.1:{port}: cannot listen", r.stderr)
            self.assertFalse(os.path.exists(mark))

    def test_hostile_clients_harm_neither_the_shim_nor_the_job(self):
        # While the job runs: 300 connections that say nothing, one that
        # sends 1 MiB of header, one that sends a byte a second, one that asks
        # and never reads. A scrape still answers, the job's output is whole,
        # and it ends as it would have.
        port = free_port()
        p = spawn([SHIM, "--metrics-addr", f"127.0.0.1:{port}", "--nproc-per-node", "2", "--",
                   "sh", "-c", "for i in $(seq 1 40); do echo line $i; sleep 0.1; done"],
                  env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(p.kill)
        scrape_when_up(port)
        crowd = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            crowd.append(s)
        huge = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            huge.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20))
        except OSError:
            pass  # closed by the door once past its 8 KiB: as it should
        drip = socket.create_connection(("127.0.0.1", port), timeout=5)
        deaf = socket.create_connection(("127.0.0.1", port), timeout=5)
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        deaf.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        for _ in range(3):
            drip.send(b"G")
            time.sleep(0.5)
        status, _, text = scrape(port)
        self.assertEqual(status, 200)
        self.assertIn("aml_shim_node_state", text)
        out, err = p.communicate(timeout=60)
        for s in crowd + [huge, drip, deaf]:
            s.close()
        self.assertEqual(p.returncode, 0, err)
        for rank in (0, 1):
            self.assertEqual([l for l in out.splitlines() if l.startswith(f"[rank {rank}] line")],
                             [f"[rank {rank}] line {i}" for i in range(1, 41)])


DGX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gpu", "dgx8")


class DcgmJobDir(unittest.TestCase):
    def test_each_gpu_of_the_ranks_names_the_job_while_it_runs(self):
        # GPUs 6 and 1 of a DGX's eight (the fixture's driver and sysfs
        # trees): files 6 and 1 hold the job's id (failure.json's "run")
        # while the ranks run, and are gone once the shim ends.
        with tempfile.TemporaryDirectory() as tmp:
            mapping = os.path.join(tmp, "map")
            os.mkdir(mapping)
            logs = os.path.join(tmp, "logs")
            r = run([SHIM, "--dcgm-job-dir", mapping, "--log-dir", logs,
                     "--proc-root", os.path.join(DGX, "proc"), "--sysfs-root", os.path.join(DGX, "sys"),
                     "--nproc-per-node", "2", "--", "sh", "-c",
                     # Rank 0 reads the files; then rank 1 fails (failure.json).
                     f'if [ "$RANK" = 0 ]; then ls {mapping}; cat {mapping}/6 {mapping}/1; '
                     f'touch {tmp}/read; exit 0; fi; '
                     f'while [ ! -e {tmp}/read ]; do sleep 0.05; done; exit 1'],
                    env=clean_env(CUDA_VISIBLE_DEVICES="6,1"))
            self.assertEqual(r.returncode, 1, r.stderr)
            run_id = json.loads(slurp(os.path.join(logs, "failure.json")))["run"]
            seen = [l.split("] ", 1)[1] for l in r.stdout.splitlines() if l.startswith("[rank 0]")]
            self.assertEqual(seen, ["1", "6", run_id, run_id])
            self.assertEqual(os.listdir(mapping), [])
            # A link in its place is refused, and nothing runs.
            os.symlink("/etc", os.path.join(tmp, "link"))
            r = run([SHIM, "--dcgm-job-dir", os.path.join(tmp, "link"), "--", "touch",
                     os.path.join(tmp, "ran")], env=clean_env())
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("not a folder (a link is not followed)", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "ran")))


if __name__ == "__main__":
    main()
