"""The command line, exit codes and messages, without a launcher."""
import json
import os
import stat
import tempfile
import unittest

from harness import PYTHON, SHIM, SRC, clean_env, free_port, main, require_namespaces, run


class Cli(unittest.TestCase):
    def expect_error(self, args, code, message, env=None):
        r = run([SHIM] + args, env=env)
        self.assertEqual(r.returncode, code, r.stderr)
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("aml-shim: "), lines[0])
        self.assertIn(message, lines[0])
        self.assertEqual(r.stdout, "")

    def test_help_lists_every_option(self):
        r = run([SHIM, "--help"])
        self.assertEqual(r.returncode, 0)
        for opt in ["--nproc-per-node", "--master-addr", "--master-port", "--rendezvous",
                    "--local-rank-arg", "--tf-config", "--ps-count", "--log-dir",
                    "--tag-output", "--no-tag-output", "--grace", "--ib", "--sysfs-root",
                    "--preflight", "--preflight-bytes", "--min-busbw", "--quiet", "--verbose",
                    "--node-launcher",
                    "AML_SHIM_"]:
            self.assertIn(opt, r.stdout)

    def test_install_script_installs_a_stripped_binary_and_uninstalls_cleanly(self):
        # README "Install", from source: scripts/install.sh (cmake --install
        # --strip; the build's binary carries 43 MB of debug information),
        # then --uninstall: every file, and the folders it made that they
        # leave empty, not a folder that was there before (an empty bin/,
        # as /usr/local/bin on a new machine).
        build = os.path.dirname(os.path.realpath(SHIM))
        if os.path.realpath(build) != os.path.realpath(os.path.join(SRC, "build")):
            self.skipTest(f"{SHIM} is not this checkout's build/ (scripts/install.sh's)")
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "prefix")
            os.makedirs(os.path.join(prefix, "bin"))
            r = run([os.path.join(SRC, "scripts", "install.sh"), "--prefix", prefix])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            binary = os.path.join(prefix, "bin", "aml-shim")
            sections = run(["readelf", "-S", "-W", binary]).stdout
            self.assertNotIn(".debug_info", sections)
            self.assertNotIn(".symtab", sections)
            self.assertTrue(os.path.exists(os.path.join(prefix, "share", "man", "man1", "aml-shim.1")))
            self.assertTrue(os.path.exists(os.path.join(prefix, "share", "doc", "aml-shim", "README.md")))
            self.assertEqual(run([binary, "--version"]).stdout, run([SHIM, "--version"]).stdout)
            self.assertIn(f"uninstall: scripts/install.sh --uninstall --prefix {prefix}", r.stdout)
            r = run([os.path.join(SRC, "scripts", "install.sh"), "--uninstall", "--prefix", prefix])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(os.listdir(prefix), ["bin"])
            self.assertEqual(os.listdir(os.path.join(prefix, "bin")), [])
            # A prefix the install made is removed whole.
            fresh = os.path.join(tmp, "fresh", "local")
            self.assertEqual(run([os.path.join(SRC, "scripts", "install.sh"), "--prefix",
                                  fresh]).returncode, 0)
            r = run([os.path.join(SRC, "scripts", "install.sh"), "--uninstall", "--prefix", fresh])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(os.listdir(tmp), ["prefix"])

    def test_a_rank_that_cannot_reach_rank_0_says_so_once_with_verbose_too(self):
        # docs/troubleshooting.md's example, with -v (it printed its line
        # twice: once as it failed, once more as it left).
        env = clean_env(RANK="1", WORLD_SIZE="2", NODE_RANK="1", MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(free_port()))
        r = run([SHIM, "-v", "--preflight", "tcp", "--preflight-timeout", "1", "--", "true"],
                env=env, timeout=60)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(r.stderr.count("cannot connect to MASTER_ADDR:MASTER_PORT"), 1, r.stderr)

    def test_a_munged_that_does_not_answer_is_named_at_once(self):
        # A stale socket of a munged that is gone (a newcomer's root):
        # libmunge retried it for 2.5 s before the preflight said anything;
        # one connect now says where munged does not answer.
        require_namespaces("--mount", why="a mount namespace (a /run/munge of its own)")
        env = clean_env(RANK="1", WORLD_SIZE="2", NODE_RANK="1", MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(free_port()))
        stale = ('import socket; s = socket.socket(socket.AF_UNIX); '
                 's.bind("/run/munge/munge.socket.2"); s.close()')
        script = (f'mkdir -p /run/munge && mount -t tmpfs none /run/munge && '
                  f'{PYTHON} -c \'{stale}\' && exec "$@"')
        r = run(["unshare", "--mount", "sh", "-c", script, "sh", SHIM, "-v", "--preflight", "tcp",
                 "--preflight-timeout", "1", "--", "true"], env=env, timeout=60)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("and no MUNGE (munged does not answer at /run/munge/munge.socket.2: "
                      "Connection refused)", r.stderr)

    def test_version(self):
        r = run([SHIM, "--version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^aml-shim \d+\.\d+\.\d+")
        # A build of this checkout says what a release of it would
        # (scripts/version.sh's `git describe` rule, taken at each build):
        # scripts/build.sh's said the bare project version, 0.1.0.
        build = os.path.dirname(os.path.realpath(SHIM))
        if os.path.realpath(build) != os.path.realpath(os.path.join(SRC, "build")):
            self.skipTest(f"{SHIM} is not this checkout's build/")
        v = run([os.path.join(SRC, "scripts", "version.sh")])
        self.assertEqual(v.returncode, 0, v.stderr)
        self.assertEqual(r.stdout, f"aml-shim {v.stdout.strip()}\n")

    def test_exit_status_is_the_commands(self):
        self.assertEqual(run([SHIM, "--", "sh", "-c", "exit 7"]).returncode, 7)
        self.assertEqual(run([SHIM, "sh", "-c", "kill -TERM $$"]).returncode, -15)

    def test_command_not_found_is_127(self):
        self.expect_error(["no-such-command-xyz"], 127, "'no-such-command-xyz': command not found")

    def test_not_executable_is_126(self):
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
            f.write("echo hi\n")
        os.chmod(f.name, stat.S_IRUSR | stat.S_IWUSR)
        try:
            self.expect_error([f.name], 126, "cannot execute: Permission denied")
        finally:
            os.unlink(f.name)

    def test_bad_input_is_125_and_names_the_variable(self):
        cases = [
            ({"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"},
             "OMPI_COMM_WORLD_RANK='x' is not an integer"),
            ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"},
             "OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"),
            ({"PMI_RANK": "0", "PMI_SIZE": "99999999999999999999"},
             "PMI_SIZE='99999999999999999999' is out of range"),
            ({"AZ_BATCH_MASTER_NODE": "10.0.0.4:port"},
             "AZ_BATCH_MASTER_NODE='10.0.0.4:port' has a bad port 'port'"),
            ({"AZ_BATCH_MASTER_NODE": "[fd00::1:6105"},
             "AZ_BATCH_MASTER_NODE='[fd00::1:6105' has '[' without a closing ']'"),
            ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "gpu[01-"},
             "SLURM_STEP_NODELIST='gpu[01-' has '[' without a closing ']'"),
            ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": ""},
             "SLURM_STEP_NODELIST='' is an empty host list"),
            ({"PMI_PORT": "n1:5000", "PMI_ID": "0"}, "Hydra's -pmi-port mode"),
            ({"AML_SHIM_MASTER_PORT": "99999"},
             "AML_SHIM_MASTER_PORT='99999' is out of range (expected 1..65535)"),
            ({"AML_SHIM_LIBMPI": "/nonexistent/libmpi.so"},
             "AML_SHIM_LIBMPI='/nonexistent/libmpi.so': No such file or directory"),
            ({"MASTER_ADDR": ""},
             "MASTER_ADDR is set but empty: unset it, or set it (or --master-addr) to rank 0's "
             "address"),
            ({"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "0",
              "SLURM_NODEID": "0", "SLURM_STEP_NODELIST": "aml-no-such-node[1-2]",
              "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_JOB_ID": "5"},
             "MASTER_ADDR=aml-no-such-node1 does not resolve: Name or service not known on this "
             "node (MASTER_ADDR from first host of SLURM_STEP_NODELIST=aml-no-such-node[1-2]); "
             "set --master-addr to an address every node resolves"),
            # A newline in a value is escaped: it cannot forge an aml-shim line.
            ({"MASTER_PORT": "1\naml-shim: all good"},
             "MASTER_PORT='1\\naml-shim: all good' is not an integer"),
        ]
        marker = os.path.join(tempfile.mkdtemp(), "ran")
        for env, message in cases:
            with self.subTest(env=env):
                self.expect_error(["touch", marker], 125, message, env=clean_env(**env))
                self.assertFalse(os.path.exists(marker), "the command ran after an error")

    def test_worlds_past_2_to_the_24_are_refused(self):
        env = clean_env(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="16777216",
                        OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="1",
                        MASTER_ADDR="10.0.0.1", NODE_RANK="0")
        for n, args in (("4096", ["env", "--nproc-per-node", "4096"]),
                        ("256", ["--nproc-per-node", "256", "true"])):
            with self.subTest(args=args):
                self.expect_error(args, 125, f"--nproc-per-node={n} on OMPI_COMM_WORLD_SIZE="
                                  "16777216 makes WORLD_SIZE ", env=env)

    def test_a_preflight_that_times_out_says_after_the_timeout_given(self):
        env = clean_env(RANK="0", WORLD_SIZE="2", NODE_RANK="0", MASTER_ADDR="127.0.0.1",
                        MASTER_PORT="29558")
        self.expect_error(["--preflight", "tcp", "--preflight-timeout", "2", "true"], 125,
                          "preflight tcp: 1 of 2 ranks did not reach MASTER_ADDR:MASTER_PORT="
                          "127.0.0.1:29558 within 2.0 s: rank 1 (each says why on its own host)",
                          env=env)

    def test_bad_options_are_125(self):
        self.expect_error(["--master-port", "0", "true"], 125,
                          "--master-port='0' is out of range")
        self.expect_error(["--bogus", "true"], 125, "bogus")
        self.expect_error([], 125, "no command given")
        self.expect_error(["--rendezvous", "magic", "true"], 125,
                          "--rendezvous='magic' is not one of auto|env|mpi")
        self.expect_error(["--rendezvous", "mpi", "true"], 125,
                          "the rendezvous needs a PMIx server or an MPI launcher, but this rank's "
                          "world comes from singleton: set --master-addr or MASTER_ADDR")
        self.expect_error(["--min-busbw", "200", "true"], 125,
                          "--min-busbw='200' needs --preflight nccl or all")
        self.expect_error(["--preflight", "nccl", "--preflight-bytes", "1.5G", "true"], 125,
                          "--preflight-bytes='1.5G' is not a size from 4 to 64G")
        self.expect_error(["--preflight", "all", "--min-busbw", "-3", "true"], 125,
                          "--min-busbw='-3' is not a bandwidth in GB/s")
        self.expect_error(["--preflight-timeout", "soon", "true"], 125,
                          "--preflight-timeout='soon' is not a duration from 0.1 s to 7 days")

    def test_subcommands_refuse_options_that_do_not_apply(self):
        self.expect_error(["probe", "--nproc-per-node", "8", "--master-port", "7"], 125,
                          "--nproc-per-node does not apply to 'aml-shim probe'")
        self.expect_error(["probe", "--master-port", "7"], 125,
                          "--master-port does not apply to 'aml-shim probe'")
        self.expect_error(["env", "--log-dir", "x", "--grace", "5"], 125,
                          "--log-dir does not apply to 'aml-shim env' "
                          "(it only applies when running a command)")
        self.expect_error(["env", "--preflight", "tcp"], 125,
                          "--preflight does not apply to 'aml-shim env'")
        self.expect_error(["--explain", "true"], 125,
                          "--explain does not apply to running a command (use 'aml-shim env')")
        # Job-wide AML_SHIM_* settings are not refused where they do not apply:
        # `env` still shows what the command would get.
        r = run([SHIM, "env"], env=clean_env(AML_SHIM_LOG_DIR="/tmp/x", AML_SHIM_GRACE="5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("export RANK=0", r.stdout)

    def test_tf_config_single_node(self):
        r = run([SHIM, "env", "--json", "--tf-config"],
                env=clean_env(PMI_RANK=1, PMI_SIZE=2, MPI_LOCALRANKID=1, MPI_LOCALNRANKS=2,
                              MASTER_PORT=4000))
        self.assertEqual(r.returncode, 0, r.stderr)
        tf = json.loads(json.loads(r.stdout)["env"]["TF_CONFIG"])
        self.assertEqual(tf, {"cluster": {"worker": ["127.0.0.1:4001", "127.0.0.1:4002"]},
                              "task": {"type": "worker", "index": 1}, "environment": "cloud"})

    def test_tf_config_port_in_use_is_warned_about(self):
        import socket
        with socket.socket() as busy:
            busy.bind(("0.0.0.0", 0))
            busy.listen()
            port = busy.getsockname()[1]
            r = run([SHIM, "--tf-config", "--", "true"],
                    env=clean_env(PMI_RANK=1, PMI_SIZE=2, MPI_LOCALRANKID=1, MPI_LOCALNRANKS=2,
                                  MASTER_PORT=port - 2))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"aml-shim: warning: --tf-config: port {port} of rank 1 (127.0.0.1:{port}) "
                      "is in use on this host", r.stderr)

    def test_preflight_tcp_of_a_world_of_one(self):
        r = run([SHIM, "--preflight", "tcp", "--", "echo", "ran"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "ran\n")

    def test_env_json_singleton(self):
        r = run([SHIM, "env", "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["source"], "singleton")
        self.assertEqual(doc["env"]["RANK"], "0")
        self.assertEqual(doc["env"]["WORLD_SIZE"], "1")
        self.assertEqual(doc["env"]["MASTER_ADDR"], "127.0.0.1")

    def test_env_exports_are_eval_able(self):
        r = run(["sh", "-c", f'eval "$({SHIM} env)" && echo "$RANK/$WORLD_SIZE/$MASTER_PORT"'],
                env=clean_env(PMI_RANK=1, PMI_SIZE=3, MPI_LOCALRANKID=1, MPI_LOCALNRANKS=3,
                              MASTER_PORT=4567))
        self.assertEqual(r.stdout.strip(), "1/3/4567", r.stderr)

    def test_user_values_are_kept_and_explained(self):
        r = run([SHIM, "env", "--explain"],
                env=clean_env(OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2,
                              OMPI_COMM_WORLD_LOCAL_RANK=1, OMPI_COMM_WORLD_LOCAL_SIZE=2,
                              OMP_NUM_THREADS=6))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OMP_NUM_THREADS=6", r.stdout)
        self.assertIn("set by the user", r.stdout)
        self.assertIn("RANK=1", r.stdout)
        self.assertIn("OMPI_COMM_WORLD_RANK=1", r.stdout)

    def test_conflicting_preset_is_warned(self):
        r = run([SHIM, "sh", "-c", "echo $RANK"],
                env=clean_env(OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2,
                              OMPI_COMM_WORLD_LOCAL_RANK=1, OMPI_COMM_WORLD_LOCAL_SIZE=2,
                              RANK=0, WORLD_SIZE=1))
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "1")
        self.assertIn("aml-shim: warning: torch environment variables (RANK=0, WORLD_SIZE=1) "
                      "disagree with Open MPI", r.stderr)

    def test_local_rank_arg(self):
        r = run([SHIM, "--local-rank-arg", "--", "sh", "-c", 'echo "$@"', "sh", "a"],
                env=clean_env(RANK=3, WORLD_SIZE=4, LOCAL_RANK=1, LOCAL_WORLD_SIZE=4))
        self.assertEqual(r.stdout.strip(), "a --local_rank=1", r.stderr)

    def test_torchelastic_variables_without_an_agent_store(self):
        # torchrun's worker contract, but never an agent store aml-shim
        # does not run.
        r = run([SHIM, "env", "--json"])
        env = json.loads(r.stdout)["env"]
        self.assertEqual(env["TORCHELASTIC_USE_AGENT_STORE"], "False")
        self.assertEqual(env["TORCHELASTIC_RUN_ID"], "none")
        self.assertEqual(env["TORCHELASTIC_MAX_RESTARTS"], "0")


if __name__ == "__main__":
    main()
