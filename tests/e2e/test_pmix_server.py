"""A PMIx server offered in the environment that does not answer: a stale
PMIX_SERVER_URI whose port another service took (it accepts and says
nothing), or one with nothing listening. PMIx_Init is bounded (10 s), the
warning names the server, and the job falls back to the launcher's
variables as docs/world.md says; where the variables cannot settle the
world (the MPI rendezvous would meet the same server in MPI_Init), the error
is aml-shim's own, exit 125, and nothing runs."""
import os
import socket
import subprocess
import tempfile
import unittest

from harness import SHIM, clean_env, free_port, kill_group, main, spawn


def ompi_world(rank, size, local_size, uri):
    return dict(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(size),
                OMPI_COMM_WORLD_LOCAL_RANK=str(rank % local_size),
                OMPI_COMM_WORLD_LOCAL_SIZE=str(local_size), PMIX_NAMESPACE="stale@1",
                PMIX_RANK=str(rank), PMIX_VERSION="4.2.2", PMIX_SERVER_URI41=uri)


class PmixServer(unittest.TestCase):
    def setUp(self):
        # Accepts every connection and never answers.
        self.silent = socket.socket()
        self.silent.bind(("127.0.0.1", 0))
        self.silent.listen(64)
        self.uri = f"pmix-server.4242;tcp4://127.0.0.1:{self.silent.getsockname()[1]}"

    def tearDown(self):
        self.silent.close()

    def test_a_server_that_never_answers_is_given_up_and_the_variables_are_used(self):
        port = free_port()
        with tempfile.TemporaryDirectory() as tmp:
            procs = []
            for rank in range(2):
                env = clean_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                **ompi_world(rank, 2, 2, self.uri))
                # The control plane needs a job secret, which PMIx would give.
                procs.append(spawn([SHIM, "--fail-fast", "job", "--", "sh", "-c",
                                    f"echo $RANK of $WORLD_SIZE > {tmp}/ran-$RANK"],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True))
            try:
                results = [p.communicate(timeout=90) for p in procs]
            finally:
                for p in procs:
                    kill_group(p)
            for rank, (p, (_, err)) in enumerate(zip(procs, results)):
                self.assertEqual(p.returncode, 0, err)
                self.assertIn("aml-shim: warning: PMIx server offered, but not used: PMIx_Init in "
                              "libpmix.so.2 did not return within 10 s: the PMIx server at "
                              f"PMIX_SERVER_URI41='{self.uri}' did not answer", err)
                self.assertIn("the world comes from the launcher's variables", err)
                with open(f"{tmp}/ran-{rank}") as f:
                    self.assertEqual(f.read(), f"{rank} of 2\n")

    def test_a_server_with_nothing_listening_is_a_clear_error_not_mpi_init(self):
        self.silent.close()  # its port now refuses
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([SHIM, "--", "touch", f"{tmp}/ran"], env=clean_env(
                **ompi_world(0, 2, 1, self.uri)), capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("aml-shim: the rendezvous needs the launcher's PMIx server: PMIx_Init "
                          "failed in libpmix.so.2", r.stderr)
            self.assertIn(f"(the server at PMIX_SERVER_URI41='{self.uri}'); Open MPI's MPI_Init "
                          "would meet the same server: set --master-addr or MASTER_ADDR", r.stderr)
            self.assertFalse(os.path.exists(f"{tmp}/ran"), "the command ran")


if __name__ == "__main__":
    main()
