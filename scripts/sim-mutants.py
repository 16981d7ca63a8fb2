#!/usr/bin/env python3
"""Plants small bugs, one at a time, in the control plane (shim/control) and
the node's supervisor (launch/), and reports which of them the simulator
alone catches (docs/testing.md, "What the simulator proves").

Each bug is the kind a tired developer makes: a comparison turned round, a
word never sent, a deadline forgotten. For each, the script copies the
sources into a scratch tree (the checkout is never touched), plants the bug,
rebuilds build/aml-plane-sim there, and runs the simulator as CI does:
random faults over many seeds, and each fault kind alone. A bug is caught
when some run breaks an invariant or the oracle; the first such run is
printed, with the command that replays it.

Usage: scripts/sim-mutants.py [--seeds N] [--only NAME] [--keep DIR]
Exit 0 when at least --aim percent (default 90) are caught."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, file, what is there, what the bug puts there, what it breaks)
MUTANTS = [
    ("never-says-ended", "shim/control/job_frames.cc",
     "           j->Order(EndAttemptOrder{});\n         }\n         j->MaybeSendEnded(at);",
     "           j->Order(EndAttemptOrder{});\n         }",
     "a shim whose ranks had already ended never says 'ended': every restart round times out as lost"),
    ("exits-while-restarts-remain", "shim/control/job_machine.cc",
     "if (failed_at_ > 0) return !attempts_.MayRestart() && now >= failed_at_ + VerdictWait();",
     "if (failed_at_ > 0) return now >= failed_at_ + VerdictWait();",
     "a failing shim exits after 5 s although restarts remain"),
    ("latest-failure-named", "shim/control/job_machine.cc",
     "if (f.wall_time < first->wall_time) first = &f;",
     "if (f.wall_time > first->wall_time) first = &f;",
     "the latest failure of the window is named instead of the earliest"),
    ("roll-call-one-short", "shim/control/job_rollcall.cc",
     "  NoteRas(m.Str(\"ras\"));\n  if (AllIn(reported_)) FinishCollect(now);",
     "  NoteRas(m.Str(\"ras\"));\n  if (static_cast<int>(reported_.size()) >= c_.size - 1) FinishCollect(now);",
     "the roll-call is finished one shim short"),
    ("back-off-skipped", "shim/control/attempts.cc",
     "  backoff_until_ = now + backoff_s_;",
     "  backoff_until_ = now;",
     "the back-off is skipped"),
    ("attempt-not-recorded", "shim/control/attempts.cc",
     "  RestartVerdict v = Decide();\n  list_.push_back(current_);",
     "  RestartVerdict v = Decide();",
     "a restarted attempt is not recorded"),
    ("lost-exits-124", "shim/control/job_machine.cc",
     "StopOrder own = StopOrder::Of(125, \"aml-shim: \" + EscapeControl(what)",
     "StopOrder own = StopOrder::Of(124, \"aml-shim: \" + EscapeControl(what)",
     "a lost shim makes rank 0 exit 124"),
    ("startup-rule-flipped", "shim/control/liveness.cc",
     "if (now < startup_until) return kMaxSilenceS;",
     "if (now >= startup_until) return kMaxSilenceS;",
     "the start-up silence rule is flipped"),
    ("budget-off-by-one", "launch/restart_policy.cc",
     "} else if (restarts_done >= max_restarts) {",
     "} else if (restarts_done > max_restarts) {",
     "one restart more than --max-restarts"),
    ("same-failure-any-code", "launch/restart_policy.cc",
     "         a.exit_code == before.exit_code;",
     "         a.exit_code != before.exit_code;",
     "the same-failure rule compares the exit codes the wrong way"),
    ("no-halt", "shim/control/job_machine.cc",
     "    ports_->SendDown(halt.Encode());\n",
     "",
     "the ranks elsewhere are not ended until the failure window closes"),
    ("stop-not-relayed", "shim/control/job_frames.cc",
     "      {\"stop\", true,",
     "      {\"stop\", false,",
     "a shim does not pass rank 0's stop down"),
    ("bye-not-passed-down", "shim/control/job_machine.cc",
     "  ports_->SendUp(frame);\n  ports_->SendDown(frame);\n  const int code = static_cast<int>(m.Int(\"code\", 143));",
     "  ports_->SendUp(frame);\n  const int code = static_cast<int>(m.Int(\"code\", 143));",
     "a launcher's stop is not passed to the shims below"),
    ("hang-clock-not-reset", "shim/control/job_restarts.cc",
     "  ports_->ResetOutput(now);\n",
     "",
     "the hang watchdog's clock is not reset for a new attempt"),
    ("cut-off-waits", "shim/control/job_machine.cc",
     "  cut_off_ = true;\n  if (Over() || state_ == JobState::kDone) return;",
     "  cut_off_ = true;\n  return;",
     "a shim cut off from rank 0 does not end its part"),
    ("slow-loss-detection", "shim/control/liveness.h",
     "constexpr double kMinSilenceS = 5;",
     "constexpr double kMinSilenceS = 15;",
     "a steady link is lost after 15 s of silence, not 5"),
    ("round-loss-recorded-125", "shim/control/job_machine.cc",
     "    } else if (!ending) {\n      a.exit_code = 125;",
     "    } else {\n      a.exit_code = 125;",
     "a shim lost in a restart round rewrites the failed attempt's record as 125"),
    ("done-after-a-loss", "shim/control/job_machine.cc",
     "      (lost_below_ && !finished_) || failed_at_ > 0",
     "      failed_at_ > 0",
     "a shim whose child was lost says done and exits 0"),
    ("second-signal-more-grace", "shim/control/job_machine.cc",
     "&& !Over()) stop_at_ = now;",
     ") stop_at_ = now;",
     "a signal after the verdict gives the shims below another --grace"),
    ("halted-ranks-ended-well", "shim/control/job_machine.cc",
     "if (root_ && o.code == 0 && state_ == JobState::kRunning && failed_at_ == 0 &&",
     "if (root_ && o.code == 0 && failed_at_ == 0 &&",
     "rank 0's ranks ended by the halt count as ended well (no restart)"),
    ("collect-timeout-200s", "shim/control/job_machine.h",
     "constexpr double kCollectS = 20;",
     "constexpr double kCollectS = 200;",
     "the roll-call waits 200 s for a silent shim"),
    ("ending-never-times-out", "shim/control/job_machine.cc",
     "      return root ? entered_ + c_.grace_s + kEndingS : kNever;",
     "      return kNever;",
     "a restart round that a shim never finishes waits for ever"),
    # The doors (shim/control/door.cc), which the simulator's join runs.
    ("twin-let-in", "shim/control/door.cc",
     "    return Refused(\"bad rank, size or port\");\n  if (linked(",
     "    return Refused(\"bad rank, size or port\");\n  if (false && linked(",
     "a second hello for a rank already linked is let in"),
    ("hello-proof-unchecked", "shim/control/door.cc",
     "  if (std::string why; !ProvesVisitor(prover, \"tree\", challenge, *m, &why)) return Refused(why);",
     "",
     "a hello at a shim's port is let in without the job's proof"),
    ("join-proof-unchecked", "shim/control/door.cc",
     "  if (std::string why; !ProvesVisitor(prover, \"join\", challenge, *m, &why)) return Refused(why);",
     "",
     "a join at rank 0's MASTER_PORT is let in without the job's proof"),
    # The node's supervisor (launch/node_machine.cc).
    ("no-grace", "launch/node_machine.cc",
     "  kill_at_ = now + c_.grace_s;\n  if (AnyRunning()) Enter(NodeState::kTerminating);\n  KillAll(SIGTERM);",
     "  kill_at_ = now;\n  if (AnyRunning()) Enter(NodeState::kTerminating);\n  KillAll(SIGTERM);",
     "a failure's teardown sends SIGKILL at once, without --grace"),
    ("no-sigkill", "launch/node_machine.cc",
     "  if (teardown_ && state_ == NodeState::kTerminating && now >= kill_at_ && AnyRunning()) {",
     "  if (false) {",
     "ranks that ignore SIGTERM are never sent SIGKILL"),
    ("teardown-exits-are-failures", "launch/node_machine.cc",
     "  if (!teardown_ && !first_failure_) {",
     "  if (!first_failure_) {",
     "a rank ended by the teardown is taken as this node's first failure"),
    ("stragglers-kept", "launch/node_machine.cc",
     "        procs_->SignalStragglers(SIGKILL);\n        procs_->KillGroups();\n",
     "",
     "what the ranks left is never killed when the drain's time is up"),
    ("restart-before-groups-empty", "launch/node_machine.cc",
     "  if (!procs_->GroupsEmpty()) {\n    if (now < restart_wait_until_) return true;",
     "  if (false) {\n    if (now < restart_wait_until_) return true;",
     "a restart starts while the last attempt's processes live"),
    ("signal-between-attempts-exits-0", "launch/node_machine.cc",
     "      if (!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)) return 128 + shim_signal_;",
     "      if (false) return 128 + shim_signal_;",
     "a shim stopped by its launcher between two attempts exits 0"),
    ("stacks-never-sent", "launch/node_machine.cc",
     "  if (stacks_ == StackPhase::kAborting) SendStacks(now);",
     "",
     "the ranks' stacks are never sent to the roll-call"),
    ("dumps-are-failures", "launch/node_machine.cc",
     "  if (!failed || stacks_ != StackPhase::kNone) return;",
     "  if (!failed) return;",
     "a rank ended by the SIGABRT that asks for its stack is taken as a failure"),
    ("restart-after-signal", "launch/node_machine.cc",
     "void NodeMachine::Take(RestartOrder order, double now) {\n  if (stop_ || shim_signal_) return;",
     "void NodeMachine::Take(RestartOrder order, double now) {\n  if (stop_) return;",
     "a restart ordered after the launcher's signal starts an attempt"),
    # --spares (shim/control/job_spares.cc, roster.cc)
    ("spare-leaves-early", "shim/control/job_machine.cc",
     "  if (Spares() && !finished_) return;\n",
     "",
     "a spare (or a node whose ranks ended well) leaves before the job's finish"),
    ("finish-on-first-well", "shim/control/job_spares.cc",
     "  if (static_cast<int>(well_.size()) < roster_->nodes() || roster_->Vacant() > 0) return;\n  for (int h : roster_->Holders())\n    if (!well_.count(h)) return;",
     "",
     "rank 0 finishes the job when the first NODE_RANK's ranks ended well"),
    ("lost-holder-not-replaced", "shim/control/job_spares.cc",
     "    return;\n  }\n  replaced_ = true;\n  switch (state_) {",
     "    return;\n  }\n  switch (state_) {",
     "a NODE_RANK's lost holder ends the job (125) although a spare is left"),
    ("round-waits-for-the-lost", "shim/control/job_machine.h",
     "bool Counted(int shim) const { return !gone_.count(shim); }",
     "bool Counted(int shim) const { (void)shim; return true; }",
     "a restart round waits for a shim retired as lost (it times out)"),
    ("subtree-not-retired", "shim/control/job_spares.cc",
     "  for (int s : BelowOf(shim)) cut.push_back(s);\n",
     "",
     "the shims cut off below a lost one are not retired with it"),
    ("retire-after-one", "shim/control/job_spares.cc",
     "if (!alone || streak < c_.retire_after) return;",
     "if (!alone || streak < 1) return;",
     "a node is retired after its first failure"),
    ("streak-never-resets", "shim/control/roster.cc",
     "  if (shim < 0) {\n    streak_shim_ = -1;\n    streak_ = 0;\n    return 0;\n  }",
     "  if (shim < 0) return 0;",
     "a hang, a loss or failures on two nodes do not break a node's streak"),
    ("no-spare-found-late", "shim/control/job_spares.cc",
     "    return StopNoSpare(\"no spare left: \" + EscapeControl(what), now);\n  if (!held) {",
     "    (void)0;\n  if (!held) {",
     "a lost spare that leaves a NODE_RANK without one is found only at the restart"),
    ("spare-starts-ranks", "launch/node_machine.cc",
     "  for (size_t i = 0; i < ranks_.size() && !standby_; ++i) {",
     "  for (size_t i = 0; i < ranks_.size(); ++i) {",
     "a spare (or a retired node) starts ranks"),
    ("standby-made-late", "launch/warm_slots.cc",
     "  s.due = late_ ? now + kAfterS : now;",
     "  s.due = now + kAfterS;",
     "a standby is made 10 s after its rank's start in the idle class too: an early failure restarts cold"),
    ("restart-standby-not-due", "launch/node_machine_warm.cc",
     "  if (c_.warm) warm_.Due(i, true, now);",
     "  if (c_.warm && !restart) warm_.Due(i, true, now);",
     "a restart's next standbys are never made: a second failure restarts cold"),
    ("spares-taken-last-first", "shim/control/roster.cc",
     "      holder_[n] = spares_.front();\n      node_of_[static_cast<size_t>(holder_[n])] = static_cast<int>(n);\n      spares_.erase(spares_.begin());",
     "      holder_[n] = spares_.back();\n      node_of_[static_cast<size_t>(holder_[n])] = static_cast<int>(n);\n      spares_.pop_back();",
     "spares are taken last first (docs: lowest launcher rank first)"),
    # A new root (shim/control/job_heir.cc)
    ("heir-without-majority", "shim/control/job_heir.cc",
     "  if (reached * 2 <= c_.size) {",
     "  if (reached * 2 < 0) {",
     "the heir takes the job with half of the shims or fewer"),
    ("old-root-keeps-the-job", "shim/control/job_heir.cc",
     "  return c_.size >= 3 && static_cast<int>(gone_.size()) * 2 > c_.size;",
     "  return false;",
     "a root that lost more than half of the shims goes on"),
    ("heir-does-not-wait", "shim/control/election.h",
     "    not_before_ = silent ? now + kMaxSilenceS + 1 : now;",
     "    not_before_ = now;",
     "the heir takes the job before a silent old root must have let it go"),
    ("unfit-node-kept", "shim/control/job_restarts.cc",
     "  if (!unfit.empty()) {\n    NoteUnfit(shim, unfit, now);",
     "  if (false) {\n    NoteUnfit(shim, unfit, now);",
     "a node that failed its check before the next attempt is not retired"),
    ("heir-refuses-at-once", "shim/control/tree_links.cc",
     "    adopted_.push_back(frame);\n",
     "    if (m->Int(\"silent\", 0) == 1)\n      return io_->Send(rank, Msg(\"stop\").Set(\"code\", 125).Encode());\n"
     "    adopted_.push_back(frame);\n",
     "the heir stops a shim that found the root silent before it did (a frozen root on a busy "
     "machine loses the job)"),
    # Issue 49: a busy machine (--faults busy, busyroot).
    ("orphan-ends-at-once", "shim/control/job_heir.cc",
     "    ports_->SendUp(orphan.Encode());\n",
     "    ports_->SendUp(orphan.Encode());\n"
     "    Enter(JobState::kEnding, now);\n    Order(EndAttemptOrder{});\n    return;\n",
     "a shim that lost the root ends its ranks at once, before the heir's election asks it"),
    ("adopted-not-in-election", "shim/control/tree_links_losses.cc",
     "      for (const std::string& orphan : adopted_)",
     "      for (const std::string& orphan : std::vector<std::string>{})",
     "the heir forgets the root's children it took in before it found the root lost"),
    ("end-after-restart-dropped", "launch/node_machine.cc",
     "  if (restart_) end_next_ = order;",
     "  if (restart_) {}",
     "an end taken with the restart before it is dropped: the restarted ranks run on"),
    # What issue 43 found the simulator blind to, and the rules it added.
    ("heir-with-exactly-half", "shim/control/job_heir.cc",
     "  if (reached * 2 <= c_.size) {",
     "  if (reached * 2 < c_.size) {",
     "the heir takes the job with exactly half of the shims"),
    ("root-steps-down-at-half", "shim/control/job_heir.cc",
     "  return c_.size >= 3 && static_cast<int>(gone_.size()) * 2 > c_.size;",
     "  return c_.size >= 3 && static_cast<int>(gone_.size()) * 2 >= c_.size;",
     "a root that lost exactly half of the shims ends its part"),
    ("attempt-nodes-dropped", "shim/control/attempts.cc",
     "  a.nodes = nodes_;\n",
     "",
     "failure.json's attempts do not say where each NODE_RANK ran"),
    ("heir-not-renamed-at-restart", "shim/control/job_restarts.cc",
     "  // The heir (named anew: the last may be lost, or this shim was it)\n  // carries the record of every attempt so far.\n  NameHeir();",
     "",
     "a root does not rename its heir nor resend its record at a restart"),
    ("record-not-resent", "shim/control/job_restarts.cc",
     "  // carries the record of every attempt so far.\n  NameHeir();",
     "  // carries the record of every attempt so far.\n  heir_ = ports_->NameHeir();",
     "a root renames its heir at a restart but sends it no record"),
    ("heir-not-renamed-when-lost", "shim/control/job_spares.cc",
     "  if (heir_ >= 0 && gone_.count(heir_)) NameHeir();\n",
     "",
     "a root whose heir was lost names no other"),
    ("only-rank-0-names-a-heir", "shim/control/tree_links.cc",
     "  if (parent_ >= 0) return -1;\n  for (const Child& c : children_)",
     "  if (parent_ >= 0 || job_.rank != 0) return -1;\n  for (const Child& c : children_)",
     "a new root names no heir (a second takeover never happens)"),
    ("master-addr-stays", "shim/control/job_restarts.cc",
     "    o.master_addr = holder0 == 0 || addr == shim_addrs_.end() ? \"\" : addr->second;",
     "    o.master_addr = \"\";",
     "MASTER_ADDR does not move with NODE_RANK 0"),
    ("backoff-one-step-long", "launch/restart_policy.cc",
     "  for (int i = 2; i < short_run && delay < kMaxBackoffS; ++i) delay *= 2;",
     "  for (int i = 1; i < short_run && delay < kMaxBackoffS; ++i) delay *= 2;",
     "the back-off is one step too long"),
    ("streak-across-several-nodes", "shim/control/job_spares.cc",
     "  const bool alone = nodes.size() == 1 && first.shim >= 0 && !own_failure;",
     "  const bool alone = !nodes.empty() && first.shim >= 0 && !own_failure;",
     "failures on several nodes at once count for the first one's streak"),
    ("streak-kept-across-a-loss", "shim/control/job_machine.cc",
     "    Roster* r = &*roster_;\n    r->NoteFirstFailure(-1);\n",
     "",
     "a lost node between two failures does not break the streak"),
    ("signalled-stubborn-exits-143", "launch/node_machine.cc",
     "    if (first_stopped_) return ExitCodeFor(ranks_[*first_stopped_].status);",
     "    if (first_stopped_) return 128 + shim_signal_;",
     "a signalled shim whose ranks ignored SIGTERM exits 143, not their 137"),
    ("drain-cap-ignored", "launch/node_machine.cc",
     "      if (teardown_) drain_until_ = std::min(drain_until_, std::max(now, kill_at_) + kDrainAfterKillS);",
     "",
     "after SIGKILL the drain waits its whole time for what the ranks left"),
    ("node-baseline-no-ports", "shim/plan/node_check.cc",
     "      if (p.usable()) b.ports.push_back(PortName(d, p));",
     "      if (false) b.ports.push_back(PortName(d, p));",
     "a node's check forgets the ports usable as the job started"),
    ("node-check-gpus-ignored", "shim/plan/node_check.cc",
     "  if (gpus_now < was.gpus)",
     "  if (gpus_now < 0)",
     "a node's check misses a GPU gone"),
    ("heir-not-told-of-losses", "shim/control/job_spares.cc",
     "  if (root_ && heir_ >= 0 && !gone_.count(heir_) && !fresh.empty())",
     "  if (false)",
     "a root's heir hears of no loss after its record"),
    ("losses-not-heard-again", "shim/control/tree_links_losses.cc",
     "  for (const std::string& lost : lost_up_) io_->Send(parent_, lost);\n",
     "",
     "a loss passed up to the lost root alone never reaches the heir"),
    ("old-root-always-writes", "shim/control/job_spares.cc",
     "  lost_job_ = true;\n  std::string line",
     "  if (!holder.empty()) return StopNoSpare(why, now);\n  lost_job_ = true;\n  std::string line",
     "a root without a majority writes the job's record, its verdict, though its heir may hold "
     "the job (issue 63)"),
    ("no-spare-not-deferred", "shim/control/job_spares.cc",
     "  if (roster_->Vacant() > static_cast<int>(roster_->Spares().size()) && !HeirLostAlive(now))",
     "  if (roster_->Vacant() > static_cast<int>(roster_->Spares().size()))",
     "a root says 'no spare left' before its lost heir's cut is all found"),
    ("woken-root-acts-at-once", "shim/control/wake_gate.h",
     "    const bool woke = armed && last_ >= 0",
     "    const bool woke = false && armed && last_ >= 0",
     "a root woken from a pause acts on what waited in its links before it hears them anew: "
     "a 'halt' to a job its heir holds (issue 63)"),
    ("woken-root-settled-by-losses", "shim/control/tree_links.cc",
     "  return (all && !wake_.lost()) || heard * 2 > job_.size;",
     "  return all || heard * 2 > job_.size;",
     "a woken root that lost every child releases what waited: 'halt' before 'no majority'"),
    ("new-root-keeps-old-term", "shim/control/job_heir.cc",
     "  term_ = std::max(term_, record_term_ + 1);",
     "",
     "a heir that takes the job keeps its root's term: an old root's record stands over its own"),
    ("heir-runs-rank-0s-node", "shim/control/job_restarts.cc",
     "    o.node_rank = node_ = roster_->NodeOf(c_.rank);",
     "    o.node_rank = node_ = roster_->NodeOf(0);",
     "a new root takes the NODE_RANK of rank 0's shim, not its own"),
    # Naming the culprit (issue 44).
    ("hang-blames-no-node", "shim/control/job_spares.cc",
     "  const int shim = c && c->found && c->node >= 0 ? c->shim : -1;",
     "  const int shim = -1;",
     "a hang's culprit never counts as its node's failure: the bad node is never retired"),
    ("no-culprit-named", "shim/control/job_rollcall.cc",
     "  if (c_.flight_recorder) facts.culprit = CulpritOf(reports_, c_.world_ranks);",
     "  if (false) facts.culprit = CulpritOf(reports_, c_.world_ranks);",
     "a hang's roll-call names no culprit though the flight records came"),
    ("entered-counted-missing", "launch/flight/culprit.cc",
     "(g->enqueued < gap.seq ? gap.missing : gap.entered)",
     "(g->enqueued <= gap.seq ? gap.missing : gap.entered)",
     "ranks that entered the collective are counted among those that never did"),
    # Slow nodes (issue 45).
    ("pace-offset-ignored", "shim/control/straggler_looks.cc",
     "  if (clock.known) part = LocalPace(rank_, look, times, clock.offset, clock.bound);",
     "  if (clock.known) part = LocalPace(rank_, look, times, 0, clock.bound);",
     "entry times are compared on each host's own clock: skew names healthy nodes"),
    ("pace-bound-ignored", "shim/control/pace/straggler_judge.cc",
     "      const int64_t bounds_us = op->last.bound_us + op->next.bound_us;",
     "      const int64_t bounds_us = 0;",
     "a node is blamed by less than the clocks' bounds allow"),
    ("pace-share-ignored", "shim/control/pace/straggler_judge.cc",
     "    const bool steady = 2 * t.late >= ops;\n"
     "    const bool slow = n.share >= kWaitShare && (steady ? t.wait_frac : t.beyond_frac) >= kLateFrac;",
     "    const bool slow = t.late > 0;",
     "any node late once in a look counts as slow in it"),
    ("pace-offset-sign", "shim/control/pace/clock_offset.cc",
     "  s.offset = ((t2 - t1) + (t3 - t4)) / 2;",
     "  s.offset = ((t1 - t2) + (t4 - t3)) / 2;",
     "the clock offset is taken the wrong way round"),
    ("pace-partial-look-judged", "shim/control/pace/straggler_judge.cc",
     "    if (whole)\n      for (const PaceOp& op : g.ops) full = std::max(full, op.shims);",
     "    if (whole || true)\n      for (const PaceOp& op : g.ops) full = std::max(full, op.shims);",
     "a look missing a part learns the group's nodes from it: collectives of some nodes are judged"),
    ("pace-streak-kept", "shim/control/pace/straggler_judge.cc",
     "    n.streak = slow ? n.streak + 1 : 0;",
     "    n.streak = slow ? n.streak + 1 : n.streak;",
     "a look that found a node late but not slow keeps its streak: a healthy node whose "
     "checkpoints stall it now and then is named"),
    ("pace-named-a-look-late", "shim/control/pace/straggler_judge.cc",
     "    if (slow && !n.named && n.streak >= looks_) {",
     "    if (slow && !n.named && n.streak > looks_) {",
     "a slow node is named after 4 looks in a row, where the docs say 3"),
    # A cut link between the root and one child (issue 49, tree_links.cc).
    ("silent-child-lost-at-once", "shim/control/tree_links_losses.cc",
     "  if (!machine_.root() || heir < 0) return -1;",
     "  return -1;",
     "the root counts a silent child of its own lost at once, racing its move below the heir: "
     "a healthy node retired for a cut link"),
    # The heir's own link to the root cut (issue 49, tree_links.cc).
    ("heir-elects-without-asking", "shim/control/tree_links_losses.cc",
     "    if (ago >= 0 && ago < kRootHeardS && MoveBelow(",
     "    if (false && MoveBelow(",
     "a heir whose own link to the root was cut holds an election no one joins and ends its "
     "part, 125, though the root lives"),
    ("heir-awaited-by-no-one", "shim/control/tree_links_losses.cc",
     "  const int to = heir == c.rank ? next_ : heir;",
     "  const int to = heir == c.rank ? -1 : heir;",
     "the root counts its silent heir lost at once, racing its move below the successor"),
    ("heirs-place-not-handed-on", "shim/control/job_heir.cc",
     "  if (root_ && shim == heir_) NameHeir();",
     "",
     "a root whose heir moved below the successor names no heir and sends no record: the "
     "successor holds the place with the record the heir handed it, stale after a restart"),
    ("moved-child-hears-nothing-again", "shim/control/tree_links.cc",
     "    for (const std::string& said : said_down_)\n      io_->Send(",
     "    for (const std::string& said : said_down_)\n      if (false) io_->Send(",
     "a child that moved below the heir never hears the root's words its cut link lost "
     "(a restart): it stays in the old attempt"),
    ("moved-child-says-nothing-again", "shim/control/job_heir.cc",
     "    for (const std::string& said : said_up_) ports_->SendUp(said);",
     "",
     "a child that moved below the heir does not say again its words the cut link lost "
     "(its 'well'): the job waits for it"),
    ("relayed-word-lost-on-cut", "shim/control/job_frames.cc",
     "if (row->up && row->attempt && this_attempt) SayUp(frame);",
     "if (row->up && row->attempt && this_attempt) ports_->SendUp(frame);",
     "a failure passed up from below just before a cut is not said again below the heir: the "
     "root waits for the failed node's 'well' for ever"),
]

SIM_RUNS = [
    # (args, label): random faults over many seeds, then each kind alone.
    (["--shims", "2-500", "--fanout", "2-32", "--faults", "random"], "random"),
] + [(["--shims", "2-200", "--fanout", "2-32", "--faults", k], k)
     for k in ["fail", "freeze", "cut", "kill", "partition", "hang", "restart", "sigterm"]] + [
    (["--shims", "4-200", "--fanout", "2-32", "--faults", k], k)
     for k in ["kill,restarts=2,spares=2", "fail,restarts=3(failing),spares=1",
               "partition,restarts=2,spares=2", "rootloss", "unfit@10,restarts=2,spares=1",
               "kill@20:0,kill@110:root,restarts=3,spares=2", "partition@40:half,restarts=2,spares=2",
               "stubborn@0:1,sigterm@10:1", "pace", "busyroot"]] + [
    (["--file", os.path.join(ROOT, "tests", "sim", "kinds.txt")], "kinds"),
    (["--file", os.path.join(ROOT, "tests", "sim", "regressions.txt")], "regressions"),
    # Faults that end (issue 63).
    (["--file", os.path.join(ROOT, "tests", "sim", "ending.txt")], "ending"),
    (["--shims", "3-60", "--fanout", "2-32", "--faults", "nemesis"], "nemesis")]


def run(cmd, cwd, timeout=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def scratch_tree(keep):
    """A copy of the sources and a build directory of its own."""
    work = keep or tempfile.mkdtemp(prefix="aml-mutants-")
    src = os.path.join(work, "src")
    if os.path.isdir(src):
        shutil.rmtree(src)
    files = run(["git", "ls-files", "-co", "--exclude-standard"], ROOT).stdout.split("\n")
    for f in files:
        if not f or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        dst = os.path.join(src, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), dst)
    build = os.path.join(work, "build")
    cfg = run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DAML_SHIM_TESTS=OFF",
               "-DAML_SHIM_FUZZ=OFF"], work)
    if cfg.returncode != 0:
        sys.exit("cmake failed:\n" + cfg.stdout + cfg.stderr)
    return work, src, build


def build_sim(build):
    b = run(["ninja", "-C", build, "aml-plane-sim"], build)
    return b.returncode == 0, b.stdout[-2000:] + b.stderr[-2000:]


def caught(build, seeds):
    """The first run that broke, or None."""
    sim = os.path.join(build, "aml-plane-sim")
    for args, label in SIM_RUNS:
        n = seeds if label in ("random", "nemesis") else max(20, seeds // 20)
        seeds_args = [] if label in ("regressions", "kinds", "ending") else ["--seeds", f"1-{n}"]
        out = run([sim] + args + seeds_args, build, timeout=1800)
        for line in out.stdout.splitlines():
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "seed" in d and d.get("invariants") != "ok":
                return d["invariants"]
        if out.returncode not in (0, 1):
            return f"aml-plane-sim {' '.join(args)} exited {out.returncode}: {out.stderr[-300:]}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2000, help="random seeds per bug")
    ap.add_argument("--only", help="bugs by name, comma-separated")
    ap.add_argument("--keep", help="scratch directory to reuse (default: a new one)")
    ap.add_argument("--aim", type=float, default=90, help="percent that must be caught")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else set()
    mutants = [m for m in MUTANTS if not only or m[0] in only]
    if not mutants:
        sys.exit(f"no bug named {a.only!r}; the catalogue: " + ", ".join(m[0] for m in MUTANTS))
    work, src, build = scratch_tree(a.keep)
    ok, log = build_sim(build)
    if not ok:
        sys.exit("the unchanged sources do not build:\n" + log)
    broke = caught(build, a.seeds)
    if broke:
        sys.exit("the unchanged sources already break the simulator: " + broke)
    results = []
    for name, rel, old, new, what in mutants:
        path = os.path.join(src, rel)
        text = open(path).read()
        if text.count(old) != 1:
            print(f"{name}: STALE (the text to change is in {rel} {text.count(old)} times)")
            results.append((name, "stale", what, ""))
            continue
        t0 = time.time()
        open(path, "w").write(text.replace(old, new))
        try:
            ok, log = build_sim(build)
            if not ok:
                verdict, why = "no-build", log.strip().splitlines()[-1] if log.strip() else ""
            else:
                broke = caught(build, a.seeds)
                verdict, why = ("caught", broke) if broke else ("missed", "")
        finally:
            open(path, "w").write(text)
        results.append((name, verdict, what, why))
        print(f"{name}: {verdict.upper()} ({time.time() - t0:.0f} s) - {what}"
              + (f"\n    {why[:300]}" if why else ""), flush=True)
    build_sim(build)  # back to the unchanged sources
    judged = [r for r in results if r[1] in ("caught", "missed")]
    n_caught = sum(1 for r in judged if r[1] == "caught")
    pct = 100.0 * n_caught / len(judged) if judged else 0
    print(f"\n{n_caught} of {len(judged)} planted bugs caught by the simulator alone "
          f"({pct:.0f} %); missed: " +
          (", ".join(r[0] for r in judged if r[1] == "missed") or "none"))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if pct >= a.aim and all(r[1] != "stale" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
