"""The fabric probe on sysfs fixture trees and on this machine's real /sys:
`aml-shim probe`, `--json`, the env a command gets, `--ib require`, and a
user's own NCCL settings left alone."""
import json
import os
import unittest

from harness import SHIM, SRC, clean_env, main, mpirun, require, run

FIX = os.path.join(SRC, "tests", "fixtures", "sysfs")
ALL = ["nd96asr_v4", "nd_h100_v5", "baremetal_sriov", "roce_only", "ethernet_only", "empty"]
EXPECTED_HCA = {
    "nd96asr_v4": "=" + ",".join(f"mlx5_ib{i}:1" for i in range(8)),
    "nd_h100_v5": "=" + ",".join(f"mlx5_ib{i}:1" for i in range(8)),
    "baremetal_sriov": "=mlx5_0:1,mlx5_2:1",
    "roce_only": "=mlx5_0:1",
    "ethernet_only": None,
    "empty": None,
}


def probe_json(fixture):
    r = run([SHIM, "probe", "--json", "--sysfs-root", os.path.join(FIX, fixture)])
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


class Probe(unittest.TestCase):
    def test_json_on_every_fixture(self):
        for fixture in ALL:
            with self.subTest(fixture=fixture):
                doc = probe_json(fixture)
                self.assertEqual(doc["env"].get("NCCL_IB_HCA"), EXPECTED_HCA[fixture])
                for d in doc["devices"]:
                    for key in ("name", "pci", "vendor", "device", "vf", "numa_node", "netdevs",
                                "ports"):
                        self.assertIn(key, d)
                    for p in d["ports"]:
                        for key in ("port", "state", "phys_state", "link_layer", "rate_gbps",
                                    "rate"):
                            self.assertIn(key, p)

    def test_azure_an_vf_is_never_chosen(self):
        doc = probe_json("nd96asr_v4")
        self.assertNotIn("mlx5_an0", doc["env"]["NCCL_IB_HCA"])
        an = [d for d in doc["devices"] if d["name"] == "mlx5_an0"][0]
        self.assertEqual(an["ports"][0]["link_layer"], "Ethernet")
        self.assertTrue(all(d["vf"] for d in doc["devices"]))
        ib = [d for d in doc["devices"] if d["name"] == "mlx5_ib0"][0]
        self.assertEqual(ib["ports"][0]["rate_gbps"], 200)

    def test_roce_gid_index(self):
        doc = probe_json("roce_only")
        self.assertEqual(doc["env"]["NCCL_IB_GID_INDEX"], "3")

    def test_table(self):
        r = run([SHIM, "probe", "--sysfs-root", os.path.join(FIX, "baremetal_sriov")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("mlx5_1       1     0000:05:00.1", r.stdout)
        self.assertIn("DOWN", r.stdout)
        self.assertIn("excluded: mlx5_1:1 (DOWN)", r.stdout)

    def test_real_sys_of_this_machine(self):
        r = run([SHIM, "probe"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no RDMA devices", r.stdout)
        doc = json.loads(run([SHIM, "probe", "--json"]).stdout)
        self.assertEqual(doc["devices"], [])
        self.assertEqual(doc["env"], {})

    def test_env_the_command_gets(self):
        r = run([SHIM, "--sysfs-root", os.path.join(FIX, "nd_h100_v5"), "--", "sh", "-c",
                 'echo "$NCCL_IB_HCA|$UCX_NET_DEVICES"'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), EXPECTED_HCA["nd_h100_v5"] + "|mlx5_ib0:1")
        self.assertIn("aml-shim: fabric: 8 InfiniBand ports active, 400 Gb/s 4X NDR, SR-IOV VF",
                      r.stderr)

    def test_users_own_nccl_ib_hca_is_untouched(self):
        env = clean_env(NCCL_IB_HCA="mlx5_ib3:1")
        r = run([SHIM, "--sysfs-root", os.path.join(FIX, "nd96asr_v4"), "--", "sh", "-c",
                 'echo "$NCCL_IB_HCA"'], env=env)
        self.assertEqual(r.stdout.strip(), "mlx5_ib3:1")
        r = run([SHIM, "env", "--explain", "--sysfs-root", os.path.join(FIX, "nd96asr_v4")], env=env)
        self.assertIn("NCCL_IB_HCA=mlx5_ib3:1", r.stdout)
        self.assertIn("set by the user", r.stdout)

    def test_ib_require(self):
        for fixture in ALL:
            with self.subTest(fixture=fixture):
                r = run([SHIM, "--ib", "require", "--sysfs-root", os.path.join(FIX, fixture), "--",
                         "echo", "ran"])
                if EXPECTED_HCA[fixture]:
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout, "ran\n")
                else:
                    self.assertEqual(r.returncode, 125)
                    self.assertEqual(r.stdout, "")
                    self.assertIn("aml-shim: --ib require: no active InfiniBand or RoCE v2 port",
                                  r.stderr)
        r = run([SHIM, "--ib", "require", "--", "echo", "ran"])  # this machine's /sys
        self.assertEqual(r.returncode, 125)

    def test_ethernet_only_warns_tcp(self):
        r = run([SHIM, "--sysfs-root", os.path.join(FIX, "ethernet_only"), "--", "true"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("aml-shim: warning: no active InfiniBand/RoCE port: NCCL will use TCP "
                      "sockets (mlx5_an0 (Ethernet, no RoCE v2 IPv4 GID))", r.stderr)

    def test_ib_off_writes_nothing(self):
        r = run([SHIM, "--ib", "off", "--sysfs-root", os.path.join(FIX, "nd96asr_v4"), "--", "sh",
                 "-c", 'echo "[$NCCL_IB_HCA]"'])
        self.assertEqual(r.stdout.strip(), "[]")
        self.assertEqual(r.stderr, "")

    def test_summary_once_per_node_under_mpirun(self):
        require("mpirun")
        r = run(mpirun(3, SHIM, "--sysfs-root", os.path.join(FIX, "nd96asr_v4"), "--", "true"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("aml-shim: fabric: 8 InfiniBand ports active"), 1, r.stderr)

    def test_missing_topo_file_from_nccl_conf(self):
        conf = os.path.join(FIX, "..", "nccl-missing-topo.conf")
        r = run([SHIM, "probe", "--sysfs-root", os.path.join(FIX, "nd96asr_v4")],
                env=clean_env(NCCL_CONF_FILE=conf))
        self.assertIn("warning: NCCL_TOPO_FILE='/opt/microsoft/ndv4-topo-absent.xml'", r.stdout)
        self.assertIn("does not exist", r.stdout)


if __name__ == "__main__":
    main()
