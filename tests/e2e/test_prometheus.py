"""Prometheus scrapes the shims (docs/control-plane.md, "Slow nodes"): with
--metrics-addr every shim serves its metrics, and Debian's Prometheus server
scrapes the three nodes of a netns cluster while hostile clients hold the
shims' ports. torch 2.14 (Gloo) in the forky root under Open MPI 4.1's
mpirun, running scripts/paced_steps.py, as test_slow_nodes.py does; this
file's cluster is its own, and it runs beside the other tests (it judges
no node's speed: test_slow_nodes.py, which does, runs alone)."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

from harness import free_port, main
from test_slow_nodes import PacedNodes


class Prometheus(PacedNodes, unittest.TestCase):
    cluster, subnet = "amlp", 46

    def test_prometheus_scrapes_every_shim_while_hostile_clients_harm_nothing(self):
        # Debian's Prometheus server, on this machine, scrapes the three
        # nodes' shims over the netns bridge every second; meanwhile each
        # shim's port holds 40 idle connections, a 1 MiB request and a
        # client that drips a byte a second. The scrapes go on, the job ends
        # well, and promtool accepts what a shim serves.
        port = free_port()
        result = {}
        job = threading.Thread(target=lambda: result.setdefault(
            "r", self.job(3, "--straggler-check", "5s", "--metrics-addr", f":{port}",
                          RUN_S=45)), daemon=True)
        job.start()
        targets = [f"{self.net}.{i}:{port}" for i in (1, 2, 3)]
        hostile = []
        for target in targets:
            host, p = target.split(":")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    socket.create_connection((host, int(p)), timeout=2).close()
                    break
                except OSError:
                    time.sleep(0.5)
            for _ in range(40):
                hostile.append(socket.create_connection((host, int(p)), timeout=5))
            big = socket.create_connection((host, int(p)), timeout=5)
            try:
                big.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20))
            except OSError:
                pass  # refused midway: as it should be
            hostile.append(big)
        stop = threading.Event()

        def drip():
            conns = [socket.create_connection((t.split(":")[0], int(port)), timeout=5)
                     for t in targets]
            while not stop.wait(1):
                for c in conns:
                    try:
                        c.send(b"G")
                    except OSError:
                        pass
            for c in conns:
                c.close()
        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        work = tempfile.mkdtemp(dir="/tmp")
        self.addCleanup(shutil.rmtree, work, True)
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: aml\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        web = free_port()
        prom = subprocess.Popen(["prometheus", f"--config.file={config}",
                                 f"--storage.tsdb.path={work}/data",
                                 f"--web.listen-address=127.0.0.1:{web}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(prom.wait)
        self.addCleanup(prom.kill)

        def query(q):
            url = f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": q})
            try:
                return json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
            except (OSError, ValueError, KeyError):
                return []

        seen = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(seen) < 3:
            for res in query("aml_shim_straggler_looks_total >= 2"):
                seen[res["metric"]["instance"]] = res["value"][1]
            time.sleep(1)
        up = {res["metric"]["instance"]: res["value"][1] for res in query("up")}
        # (Asked while the job runs: once its shims are gone, Prometheus
        # marks their series stale and a query finds none.)
        shims = query('aml_shim_job_shims{instance="%s"} == 3' % targets[0])
        stop.set()
        dripper.join()
        job.join(timeout=300)
        for c in hostile:
            c.close()
        r = result["r"]
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(seen), sorted(targets), (up, r.stderr))
        self.assertEqual(set(up.values()), {"1"}, up)
        self.assertTrue(shims, up)


if __name__ == "__main__":
    main()
