"""aml-shim under real Open MPI mpirun on this machine (one node)."""
import os
import tempfile
import unittest

from harness import (SHIM, assert_each_rank_refused, clean_env, json_lines, main, mpirun, recorded,
                     require, run)

SHOW = ('echo "{\\"rank\\":$RANK,\\"size\\":$WORLD_SIZE,\\"local\\":$LOCAL_RANK,'
        '\\"local_size\\":$LOCAL_WORLD_SIZE,\\"node\\":$NODE_RANK,\\"addr\\":\\"$MASTER_ADDR\\",'
        '\\"port\\":$MASTER_PORT,\\"omp\\":\\"$OMP_NUM_THREADS\\",'
        '\\"parent\\":\\"$(ps -o comm= -p $PPID)\\",\\"ompi_rank\\":$OMPI_COMM_WORLD_RANK}"')


class MpiRun(unittest.TestCase):
    def setUp(self):
        require("mpirun")

    def ranks(self, np, *shim_args, x=(), env=None):
        r = run(mpirun(np, SHIM, *shim_args, "--", "sh", "-c", SHOW, x=x), env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        docs = sorted(json_lines(r.stdout), key=lambda d: d["rank"])
        self.assertEqual(len(docs), np, r.stdout)
        return docs

    def test_world_of_four(self):
        docs = self.ranks(4)
        self.assertEqual([d["rank"] for d in docs], [0, 1, 2, 3])
        for d in docs:
            self.assertEqual(d["rank"], d["ompi_rank"])
            self.assertEqual(d["size"], 4)
            self.assertEqual(d["local"], d["rank"])
            self.assertEqual(d["local_size"], 4)
            self.assertEqual(d["node"], 0)
            self.assertEqual(d["addr"], "127.0.0.1")
            self.assertEqual(d["omp"], "1")
        # Every rank derives the same port from the job id, and it is not 29500.
        ports = {d["port"] for d in docs}
        self.assertEqual(len(ports), 1)
        self.assertNotEqual(ports.pop(), 29500)

    def test_exec_in_place_keeps_the_launchers_child(self):
        # The command is mpirun's (or orted's) direct child: aml-shim exec'd
        # itself away, so the launcher signals and waits on the real process.
        for d in self.ranks(2):
            self.assertIn(d["parent"], ("mpirun", "orted", "prted", "prterun"))

    def test_two_jobs_get_different_ports(self):
        a = self.ranks(2)[0]["port"]
        b = self.ranks(2)[0]["port"]
        self.assertNotEqual(a, b)

    def test_azureml_single_node_gives_the_seeds_values(self):
        env = clean_env(AZ_BATCHAI_MPI_MASTER_NODE="127.0.0.1",
                        AZ_BATCH_MASTER_NODE="10.0.0.4:6105")
        docs = self.ranks(2, x=["AZ_BATCHAI_MPI_MASTER_NODE", "AZ_BATCH_MASTER_NODE"], env=env)
        for d in docs:
            # aml_mpienv.py: single node -> AZ_BATCHAI_MPI_MASTER_NODE, port 54965
            self.assertEqual(d["addr"], "127.0.0.1")
            self.assertEqual(d["port"], 54965)

    def test_user_master_port_is_kept(self):
        env = clean_env(MASTER_PORT="41000")
        for d in self.ranks(2, x=["MASTER_PORT"], env=env):
            self.assertEqual(d["port"], 41000)

    def test_env_subcommand_per_rank(self):
        # Each rank writes its document to a file: mpirun forwards the ranks'
        # output in the pieces it reads, and now and then one rank's line
        # arrived cut by another's.
        with tempfile.TemporaryDirectory() as tmp:
            r = run(mpirun(3, "sh", "-c", f"{SHIM} env --json > {tmp}/doc-$OMPI_COMM_WORLD_RANK"))
            self.assertEqual(r.returncode, 0, r.stderr)
            docs = []
            for rank in range(3):
                with open(f"{tmp}/doc-{rank}") as f:
                    docs.extend(json_lines(f.read()))
        docs.sort(key=lambda d: d["rank"])
        self.assertEqual([d["env"]["RANK"] for d in docs], ["0", "1", "2"])
        self.assertTrue(all(d["source"] == "Open MPI" for d in docs))

    def test_bad_environment_stops_every_rank(self):
        env = clean_env(AZ_BATCH_MASTER_NODE="10.0.0.4:notaport")
        with tempfile.TemporaryDirectory() as marks:
            cmd = recorded(marks, "OMPI_COMM_WORLD_RANK",
                           f"{SHIM} -- touch {marks}/ran-$OMPI_COMM_WORLD_RANK")
            r = run(mpirun(2, "sh", "-c", cmd, x=["AZ_BATCH_MASTER_NODE"]), env=env)
            self.assertEqual(r.returncode, 0, r.stderr)  # each wrapper exits 0
            assert_each_rank_refused(self, marks, (0, 1),
                                     "aml-shim: AZ_BATCH_MASTER_NODE='10.0.0.4:notaport' has a "
                                     "bad port 'notaport' (expected 1..65535)")

    def test_exit_code_propagates_through_mpirun(self):
        r = run(mpirun(2, SHIM, "--", "sh", "-c", 'exit $((RANK + 3))'))
        self.assertIn(r.returncode, (3, 4), r.stderr)


if __name__ == "__main__":
    main()
