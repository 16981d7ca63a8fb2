#include "shim/cli/env_command.h"

#include <algorithm>
#include <cctype>

#include "shim/base/json.h"
#include "shim/base/log.h"

namespace aml {

std::string ShellQuote(const std::string& value) {
  bool plain = !value.empty();
  for (unsigned char c : value)
    plain &= std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/' ||
             c == ':' || c == ',' || c == '=' || c == '+' || c == '@';
  if (plain) return value;
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

std::string FormatJson(const World& world, const std::vector<ChildPlan>& plans) {
  JsonWriter j;
  auto env_object = [&](const ChildPlan& plan) {
    j.BeginObject();
    for (const EnvVar& v : plan.vars)
      if (v.removed) j.Key(v.name).Null();
      else j.Key(v.name).String(v.value);
    j.EndObject();
  };
  j.BeginObject();
  j.Key("source").String(LauncherName(world.source));
  j.Key("rank").Int(world.rank.value);
  j.Key("world_size").Int(world.size.value);
  j.Key("node_rank").Int(world.node_rank.value);
  j.Key("node_count").Int(world.node_count.value);
  j.Key("spare").Bool(plans.empty());
  j.Key("env");
  if (plans.empty()) j.BeginObject().EndObject();  // a spare (--spares): no ranks yet
  else env_object(plans.front());
  j.Key("children").BeginArray();
  for (const ChildPlan& plan : plans) {
    j.BeginObject().Key("env");
    env_object(plan);
    j.Key("argv").BeginArray();
    for (const auto& a : plan.argv) j.String(a);
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const auto& w : world.warnings) j.String(w);
  j.EndArray();
  j.Key("notes").BeginArray();
  for (const auto& n : world.notes) j.String(n);
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

std::string FormatExplain(const World& world,
                          const std::vector<ChildPlan>& plans) {
  // Values come from the environment: a terminal must never get their
  // escape sequences raw.
  std::string out = std::string("# world from ") + LauncherName(world.source) + "\n";
  for (const auto& n : world.notes) out += "#   " + EscapeControl(n) + "\n";
  for (const auto& w : world.warnings) out += "# WARNING: " + EscapeControl(w) + "\n";
  for (size_t c = 0; c < plans.size(); ++c) {
    if (plans.size() > 1)
      out += "# child " + std::to_string(c) + " of " +
             std::to_string(plans.size()) + "\n";
    size_t width = 0;
    for (const EnvVar& v : plans[c].vars)
      width = std::max(width, v.name.size() + 6 + EscapeControl(v.value).size());
    for (const EnvVar& v : plans[c].vars) {
      std::string lhs = v.removed ? "unset " + v.name : v.name + "=" + EscapeControl(v.value);
      out += lhs + std::string(width - lhs.size() + 2, ' ') + "<- " + EscapeControl(v.why) + "\n";
    }
  }
  return out;
}

}  // namespace

std::string FormatEnv(const World& world, const std::vector<ChildPlan>& plans,
                      const Options& options) {
  if (options.json) return FormatJson(world, plans);
  if (options.explain) return FormatExplain(world, plans);
  std::string out;
  if (plans.empty()) out += "# a spare (--spares): no ranks until it takes a retired node's NODE_RANK\n";
  for (size_t c = 0; c < plans.size(); ++c) {
    if (plans.size() > 1)
      out += "# child " + std::to_string(c) + " of " +
             std::to_string(plans.size()) + "\n";
    for (const EnvVar& v : plans[c].vars)
      out += v.removed ? "unset " + v.name + "\n"
                       : "export " + v.name + "=" + ShellQuote(v.value) + "\n";
  }
  return out;
}

}  // namespace aml
