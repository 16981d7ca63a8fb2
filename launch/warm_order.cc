#include "launch/warm_order.h"

namespace aml {

std::string EncodeWarmOrder(const WarmOrder& order) {
  std::string out = "aml-standby-1";
  auto field = [&](const std::string& s) {
    out += '\0';
    out += s;
  };
  field(order.cwd);
  field(order.command.module ? "module" : "script");
  field(order.command.target);
  const std::vector<std::string> argv = order.command.SysArgv();
  field(std::to_string(argv.size()));
  for (const std::string& a : argv) field(a);
  field(std::to_string(order.env.size()));
  for (const std::string& e : order.env) field(e);
  out += '\0';
  return out;
}

}  // namespace aml
