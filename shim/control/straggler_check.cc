#include "shim/control/straggler_check.h"

#include "shim/base/log.h"
#include "shim/control/shim_name.h"

namespace aml {

void StragglerCheck::Judge(const PaceSample& s, int live, const HostOf& host_of,
                           const OnNamed& named) {
  const int64_t judged = judge_.judged();
  const std::vector<StragglerJudge::Change> changes = judge_.Look(s, live);
  if (GetVerbosity() == Verbosity::kVerbose) {
    size_t ops = 0;
    for (const PaceGroup& g : s.groups) ops += g.ops.size();
    std::string late;
    for (const auto& [shim, n] : judge_.nodes())
      if (n.look == s.look && n.late_ops > 0)
        late += "; " + ShimName(shim, host_of(shim)) + " late in " +
                std::to_string(n.late_ops) + " (" + std::to_string(n.streak) + " looks in a row)";
    LogVerbose("straggler look " + std::to_string(s.look) + ": " + std::to_string(s.shims) +
               " shims' parts, " + std::to_string(ops) + " collectives, " +
               std::to_string(judge_.judged() - judged) + " judged" + late);
  }
  // A check that can judge nothing says so once: the ranks' records carry
  // no entry times (a torch with no recorder), or no collective ran.
  if (!blind_said_ && judge_.looks() >= judge_.looks_needed() && judge_.judged() == 0) {
    blind_said_ = true;
    LogWarning("--straggler-check: " + std::to_string(judge_.looks()) +
               " looks found no collective that every node's ranks completed to compare (no "
               "flight record with entry times came: PyTorch 2.6 or newer keeps one, with "
               "--flight-recorder auto; or the ranks ran no collective): no node can be named");
  }
  for (const StragglerJudge::Change& c : changes) {
    const std::string host = host_of(c.shim);
    if (!c.named) {
      LogInfo(ClearedLine(c.node, host));
      continue;
    }
    LogWarning(SlowLine(c.node, host));
    if (!named(c.node)) return;
  }
}

std::string StragglerCheck::SlowJson(const HostOf& host_of) const {
  std::string out;
  for (const auto& [shim, n] : judge_.nodes()) {
    if (!n.named) continue;
    out += (out.empty() ? "[" : ",") + aml::SlowJson(n, host_of(shim));
  }
  return out.empty() ? "" : out + "]";
}

void StragglerCheck::AppendMetrics(PromText* out, bool root, const HostOf& host_of) const {
  out->Family("aml_shim_straggler_looks_total", "counter",
              "straggler looks this shim took part in (sent up, or judged at the root)");
  out->Sample("aml_shim_straggler_looks_total", static_cast<double>(sent()));
  if (!root) return;
  out->Family("aml_shim_straggler_collectives_judged_total", "counter",
              "collectives the straggler check judged");
  out->Sample("aml_shim_straggler_collectives_judged_total",
              static_cast<double>(judge_.judged()));
  // (Each family's samples follow its header, as the format wants.)
  struct Family {
    const char* name;
    const char* help;
    bool ranked;
    double (*value)(const SlowNode&);
  };
  static const Family kFamilies[] = {
      {"aml_shim_straggler_late_collectives",
       "of the last look's collectives, those the node entered last, late", true,
       [](const SlowNode& n) { return static_cast<double>(n.late_ops); }},
      {"aml_shim_straggler_lateness_seconds",
       "how late the node's last rank entered them, on average", true,
       [](const SlowNode& n) { return n.mean_late_s; }},
      {"aml_shim_straggler_wait_seconds_per_minute",
       "what the job waited for the node, per minute, in the last look", false,
       [](const SlowNode& n) { return n.wait_per_min_s; }},
      {"aml_shim_straggler_named", "1 while the node is named slow", false,
       [](const SlowNode& n) { return n.named ? 1.0 : 0.0; }},
  };
  for (const Family& f : kFamilies) {
    out->Family(f.name, "gauge", f.help);
    for (const auto& [shim, n] : judge_.nodes()) {
      PromLabels labels = {{"node", host_of(shim)}, {"shim", std::to_string(shim)}};
      if (f.ranked) labels.push_back({"rank", std::to_string(n.rank)});
      out->Sample(f.name, labels, f.value(n));
    }
  }
}

}  // namespace aml
