"""The root's links cut on network-namespace nodes (docs/control-plane.md,
"A new root", "The tree repairs itself"): 4 nodes (3 NODE_RANKs and a
spare), one shim each started side by side as pods are (RANK, WORLD_SIZE,
MASTER_ADDR), DDP over Gloo with a checkpoint per epoch, beside two busy
loops per core started before the shims (a busy node is the normal case).

- The link between the root and one child cut (its packets dropped, both
  alive): the child links below the heir and stays in the job; no node is
  lost, nothing restarts, every shim ends 0 with the undisturbed weights.
  Before: the root and the child each found the other silent after 5 s,
  and whichever came first decided; the root first counted a healthy node
  lost, retired it and stopped its shim (125).
- The link between the root and its heir cut: the heir asks the root's
  successor whether it still hears the root, links below it (handing it
  the heir's place) and stays in the job; the root names the successor its
  heir; nothing restarts, every shim ends 0 with the undisturbed weights.
  Before: the heir held an election no other shim joined and ended 125,
  and the root retired its node.
- Rank 0's node frozen on idle cores (every process SIGSTOPped), woken
  while the next attempt trains: the heir holds the job, the old root
  steps down (125) and writes no record. Woken 10 s after, during its
  heir's election, with one --log-dir shared by every node: the same, its
  word in its own node's file, and the shared failure.json says the job
  ended well (term 2). Frozen as its restart round begins (a rank killed)
  and woken 10 s later: the same, and nothing more of the job said.
- The root cut off (its node's link down): the heir takes the job with the
  3 other shims, the spare takes NODE_RANK 0 (and MASTER_ADDR), the job ends
  with the undisturbed weights; the old root ends 125 (`no majority`) and
  writes no record of the job.
- The root cut off with one --log-dir shared by every node, its link back
  12 s later (after its heir's allowance), idle and beside busy loops: the
  heir takes the job and ends it well; the old root, hearing its links
  reset as the link heals, ends 125 (`no majority`), writes its word into
  its own node's file alone, and the shared failure.json is the new root's
  (term 2): the job ended well. Before: the old root printed a verdict
  (`not restarted: no majority`, three healthy nodes retired) and wrote it
  into the shared failure.json, which stood after the job finished.
"""
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (CKPT, PYTHON, SHIM, SRC, CpuHogs, clean_env, free_port, kill_group, main,
                     require, require_namespaces, slurp, spawn, wait_for)
from test_new_root import (assert_ended_well_in_term, assert_no_record, assert_own_word,
                           assert_resumed_weights, weights_of)
from test_spares import final_weights

CLUSTER = "amlr"
SUBNET = 49
NET = f"198.18.{SUBNET}"
NETNS = os.path.join(SRC, "scripts", "netns-cluster.sh")
EPOCH = re.compile(r"^rank \d+ epoch \d+ saved\n", re.M)
EPOCHS = "100"
HEIR = re.compile(r"control plane: the root's heir is rank (\d+)'s shim at ")




def node(i):
    return f"{CLUSTER}{i}"


def listening_ports(ns, pid):
    """The TCP ports process `pid` listens on in namespace `ns`."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-ltnpH"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return sorted({int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines()
                   if f"pid={pid}," in line})


class NetnsRoot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require("ip", "iptables", "ss", PYTHON)
        require_namespaces("--net", "--mount", why="network namespaces")
        cls.addClassCleanup(subprocess.run, [NETNS, "down", CLUSTER], check=False)
        subprocess.run([NETNS, "up", CLUSTER, "4", str(SUBNET)], check=True)
        weights_of(3, EPOCHS)  # before any test's busy loops

    def start(self, tmp, log_dir="logs-{rank}", **extra):
        """Shims 0-3 on nodes 1-4 (shim 3 the spare), each with its own
        --log-dir (or one they share: `log_dir` without "{rank}") and -v
        (the heir each child is told of)."""
        port = free_port()
        procs = []
        for rank in range(4):
            env = clean_env(RANK=rank, WORLD_SIZE=4, MASTER_ADDR=f"{NET}.1", MASTER_PORT=port,
                            CKPT_DIR=tmp, FAIL_RANK="-1", EPOCHS=EPOCHS, **extra)
            out = open(f"{tmp}/shim-{rank}.out", "w")
            err = open(f"{tmp}/shim-{rank}.err", "w")
            procs.append(spawn(["ip", "netns", "exec", node(rank + 1), SHIM, "-v",
                                "--nproc-per-node", "1", "--grace", "5", "--spares", "1",
                                "--max-restarts", "3", "--log-dir",
                                f"{tmp}/" + log_dir.format(rank=rank), "--",
                                PYTHON, CKPT], env=env, stdout=out, stderr=err))
            self.addCleanup(kill_group, procs[-1])
            self.addCleanup(out.close)
            self.addCleanup(err.close)
        return procs

    def outputs(self, tmp):
        return ([slurp(f"{tmp}/shim-{i}.out") for i in range(4)],
                [slurp(f"{tmp}/shim-{i}.err") for i in range(4)])

    def text(self, tmp):
        """Every shim's output, its epochs' lines left out."""
        outs, errs = self.outputs(tmp)
        return "\n".join(f"--- shim {i}\n{EPOCH.sub('', o)}\n{e}"
                         for i, (o, e) in enumerate(zip(outs, errs)))

    def assert_weights(self, outs, text):
        """Rank 0 of the last attempt printed the weights of an undisturbed
        run resumed where the job's attempts resumed (none: never stopped)."""
        assert_resumed_weights(self, outs, 3, EPOCHS, text)

    def heir_holds_the_job(self, tmp, procs, log_dir="logs-0"):
        """Shims 1-3 end 0 with the undisturbed weights, the heir having
        taken the job with 3 of 4; the old root ends 125 and leaves no
        record of a failed job in its --log-dir. Returns the old root's
        stderr."""
        codes = [procs[i].wait(timeout=400) for i in range(1, 4)]
        code0 = procs[0].wait(timeout=120)
        outs, errs = self.outputs(tmp)
        text = self.text(tmp)
        self.assertEqual(codes, [0, 0, 0], text)
        self.assertRegex(text, r"takes the job as its root: 3 of 4 shims reached it")
        self.assert_weights(outs, text)
        self.assertEqual(code0, 125, text)
        assert_no_record(self, f"{tmp}/{log_dir}")
        return errs[0]

    def until_epoch(self, tmp, epoch):
        self.assertTrue(wait_for(lambda: f"epoch {epoch} saved" in slurp(f"{tmp}/shim-1.out"),
                                 300), self.text(tmp))

    def cut_from_the_root(self, procs, shim):
        """Drops every packet between shim `shim`'s node and rank 0's shim's
        ports (both alive; the ranks' own traffic flows)."""
        ns = node(shim + 1)
        for port in listening_ports(node(1), procs[0].pid):
            for rule in (["OUTPUT", "-d", f"{NET}.1", "--dport", str(port)],
                         ["INPUT", "-s", f"{NET}.1", "--sport", str(port)]):
                subprocess.run(["ip", "netns", "exec", ns, "iptables", "-I", rule[0], "-p",
                                "tcp", *rule[1:], "-j", "DROP"], check=True)

    def steady(self, tmp):
        """Shims 0-3 with one --log-dir they share, their epochs 0.6 s (the
        job still trains then, idle too), until the job is steady: 35 s
        after its start, past the start-up's 30 s allowances."""
        started = time.monotonic()
        procs = self.start(tmp, log_dir="logs", EPOCH_S="0.6")
        self.until_epoch(tmp, 2)
        time.sleep(max(0.0, started + 35 - time.monotonic()))
        self.assertFalse(any(final_weights(o) for o in self.outputs(tmp)[0]), self.text(tmp))
        return procs

    def freeze_root_node(self):
        """SIGSTOPs every process of rank 0's node (its shim, keeper and
        rank); returns what SIGCONTs them."""
        frozen = subprocess.run(["ip", "netns", "pids", node(1)], stdout=subprocess.PIPE,
                                text=True, check=True).stdout.split()
        for pid in frozen:
            os.kill(int(pid), signal.SIGSTOP)

        def thaw():
            for pid in frozen:
                if os.path.exists(f"/proc/{pid}"):
                    os.kill(int(pid), signal.SIGCONT)
        self.addCleanup(thaw)
        return thaw

    def heir_at_epoch_2(self, tmp):
        """Waits for epoch 2; the root's heir, as its children were told."""
        self.until_epoch(tmp, 2)
        heirs = {int(m.group(1)) for e in self.outputs(tmp)[1][1:] for m in HEIR.finditer(e)}
        self.assertEqual(len(heirs), 1, self.text(tmp))
        return heirs.pop()

    def nothing_lost(self, tmp, procs):
        """Every shim ends 0 with the undisturbed weights: nothing restarted,
        no node retired, no record left. Returns the shims' stderr."""
        codes = [p.wait(timeout=400) for p in procs]
        outs, errs = self.outputs(tmp)
        text = self.text(tmp)
        self.assertEqual(codes, [0, 0, 0, 0], text)
        for said in ("restart 1", "retired nodes", "moves to", "no majority", "was lost"):
            self.assertNotIn(said, text, text)
        self.assert_weights(outs, text)
        for i in range(4):
            assert_no_record(self, f"{tmp}/logs-{i}")
        return errs

    def test_the_roots_link_to_one_child_cut_moves_the_child_below_the_heir(self):
        with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
            procs = self.start(tmp)
            heir = self.heir_at_epoch_2(tmp)
            child = min({1, 2} - {heir})  # a NODE_RANK's shim, not the heir
            self.cut_from_the_root(procs, child)
            moved = f"linked below its heir, rank {heir}'s shim, in the job still"
            self.assertTrue(wait_for(lambda: moved in slurp(f"{tmp}/shim-{child}.err"), 120),
                            self.text(tmp))
            self.nothing_lost(tmp, procs)

    def test_the_roots_link_to_its_heir_cut_moves_the_heir_below_the_successor(self):
        # Before: the heir found the root silent and held an election no
        # other shim joined (they all heard the root); it ended its part
        # with 125, and the root counted its node lost, retired it and
        # restarted the job with the spare in its place.
        with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
            procs = self.start(tmp)
            heir = self.heir_at_epoch_2(tmp)
            self.cut_from_the_root(procs, heir)
            moved = re.compile(r"linked below the root's successor, rank (\d+)'s shim, which still "
                               r"hears the root and is its heir now, in the job still")
            self.assertTrue(wait_for(lambda: moved.search(slurp(f"{tmp}/shim-{heir}.err")), 120),
                            self.text(tmp))
            successor = int(moved.search(slurp(f"{tmp}/shim-{heir}.err")).group(1))
            self.assertNotEqual(successor, heir)
            errs = self.nothing_lost(tmp, procs)
            self.assertIn(f"the root's heir is rank {successor}'s shim", errs[successor],
                          self.text(tmp))

    def test_the_root_cut_off_leaves_the_job_to_its_heir(self):
        with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
            procs = self.start(tmp)
            self.until_epoch(tmp, 2)
            subprocess.run(["ip", "link", "set", f"{CLUSTER}h1", "down"], check=True)
            self.addCleanup(subprocess.run, ["ip", "link", "set", f"{CLUSTER}h1", "up"])
            err0 = self.heir_holds_the_job(tmp, procs)
            self.assertRegex(self.text(tmp), r"NODE_RANK 0 moves to rank 3's shim")
            self.assertIn("no majority", err0)
            for said in ("no spare left", "retired nodes", "ending the job"):
                self.assertNotIn(said, err0)

    def cut_off_then_healed(self, tmp):
        """Rank 0's node's link down once the job is steady (35 s after its
        start: past the start-up's 30 s allowances), up again 12 s later
        (past its heir's 5 s allowance), one --log-dir shared by every node:
        the old root's end, then the shared folder's word. (Epochs of 0.6 s:
        the job still trains then, idle too.)"""
        procs = self.steady(tmp)
        link = f"{CLUSTER}h1"
        subprocess.run(["ip", "link", "set", link, "down"], check=True)
        self.addCleanup(subprocess.run, ["ip", "link", "set", link, "up"])
        time.sleep(12)
        subprocess.run(["ip", "link", "set", link, "up"], check=True)
        err0 = self.heir_holds_the_job(tmp, procs, log_dir="logs")
        text = self.text(tmp)
        self.assertIn("no majority", err0, text)
        for said in ("no spare left", "retired nodes", "ending the job", "not restarted"):
            self.assertNotIn(said, err0, text)
        assert_ended_well_in_term(self, f"{tmp}/logs", 2)
        assert_own_word(self, f"{tmp}/logs", 0, "no majority")

    def test_a_frozen_root_woken_after_its_restart_rounds_start_writes_nothing_of_the_job(self):
        # Rank 2's rank killed once the job is steady: the root decides a
        # restart ("restarting") and is frozen at once, in its restart
        # round; woken 10 s later, during its heir's election, it reads its
        # heir's 'left' and steps down: it says nothing more of the job (no
        # restart, no retirement, no verdict) and writes no record of it;
        # the heir restarts the job with the spare as NODE_RANK 0 and ends
        # it well, in term 2.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.steady(tmp)
            with open(f"{tmp}/pid-0-2") as f:
                os.kill(int(f.read()), signal.SIGKILL)
            self.assertTrue(wait_for(lambda: "failed: restarting" in slurp(f"{tmp}/shim-0.err"),
                                     60), self.text(tmp))
            thaw = self.freeze_root_node()
            said = len(slurp(f"{tmp}/shim-0.err"))
            time.sleep(10)
            thaw()
            err0 = self.heir_holds_the_job(tmp, procs, log_dir="logs")
            woken = err0[said:]
            self.assertIn("steps down and writes no record of the job", woken, self.text(tmp))
            for word in ("restart 1", "retired", "not restarted", "job failed", "moves to"):
                self.assertNotIn(word, woken, self.text(tmp))
            assert_ended_well_in_term(self, f"{tmp}/logs", 2)
            assert_own_word(self, f"{tmp}/logs", 0, "steps down")

    def test_the_root_cut_off_whose_link_heals_writes_nothing_of_the_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.cut_off_then_healed(tmp)

    def test_the_root_cut_off_whose_link_heals_beside_busy_loops_writes_nothing_of_the_job(self):
        with tempfile.TemporaryDirectory() as tmp, CpuHogs(per_core=2):
            self.cut_off_then_healed(tmp)

    def test_a_frozen_root_woken_during_its_heirs_election_writes_nothing_of_the_job(self):
        # One --log-dir shared by every node; rank 0's node frozen once the
        # job is steady and woken 10 s later, while its heir holds the
        # election (it waits 31 s for an old root that may live): the old
        # root reads its heir's 'left' (and, woken after a pause, hears its
        # links anew before it acts on what waited in them), steps down and
        # writes its word into its own node's file; the heir's side ends
        # the job well and says so.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.steady(tmp)
            thaw = self.freeze_root_node()
            time.sleep(10)
            thaw()
            err0 = self.heir_holds_the_job(tmp, procs, log_dir="logs")
            self.assertIn("steps down and writes no record of the job", err0, self.text(tmp))
            for said in ("no spare left", "retired nodes", "not restarted", "restart 1"):
                self.assertNotIn(said, err0, self.text(tmp))
            assert_ended_well_in_term(self, f"{tmp}/logs", 2)
            assert_own_word(self, f"{tmp}/logs", 0, "steps down")

    def test_a_frozen_root_on_idle_cores_leaves_the_job_to_its_heir_and_steps_down(self):
        # Every process of rank 0's node (its shim, keeper and rank)
        # SIGSTOPped at epoch 2, on idle cores; woken once the next attempt
        # trains: the heir took the job, and the old root steps down.
        with tempfile.TemporaryDirectory() as tmp:
            procs = self.start(tmp)
            self.until_epoch(tmp, 2)
            thaw = self.freeze_root_node()
            self.assertTrue(wait_for(lambda: any("resumed at epoch" in o
                                                 for o in self.outputs(tmp)[0][1:]), 300),
                            self.text(tmp))
            thaw()
            err0 = self.heir_holds_the_job(tmp, procs)
            self.assertIn("steps down and writes no record of the job", err0)


if __name__ == "__main__":
    main()
