// libFuzzer entry: the first byte picks a parser, the rest is its input.
// Each parser's invariants are checked, not just "does not crash".
#include <cstdint>
#include <cstdlib>
#include <string>

#include "shim/base/host_port.h"
#include "shim/world/hostlist.h"
#include "shim/base/parse_int.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzInt(const std::string& s) {
  auto r = aml::ParseInt("X", s, -1000, 1000000);
  if (!r.ok()) {
    Check(r.error().message.rfind("X='", 0) == 0);
    return;
  }
  Check(*r >= -1000 && *r <= 1000000);
  // Re-parsing the canonical form gives the same value.
  auto again = aml::ParseInt("X", std::to_string(*r), -1000, 1000000);
  Check(again.ok() && *again == *r);
}

void FuzzHostPort(const std::string& s) {
  auto r = aml::ParseHostPort("X", s);
  if (!r.ok()) return;
  Check(!r->host.empty());
  if (r->port) {
    Check(*r->port >= 1 && *r->port <= 65535);
    auto again = aml::ParseHostPort("X", aml::JoinHostPort(r->host, *r->port));
    Check(again.ok() && again->host == r->host && again->port == r->port);
  }
}

void FuzzHostlist(const std::string& s) {
  auto r = aml::ExpandHostlist("X", s, 4096);
  if (!r.ok()) return;
  Check(!r->empty() && r->size() <= 4096);
  for (const auto& h : *r) Check(!h.empty());
  auto t = aml::ExpandTasksPerNode("X", s, 4096);
  if (t.ok()) Check(!t->empty() && t->size() <= 4096);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string s(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: FuzzInt(s); break;
    case 1: FuzzHostPort(s); break;
    default: FuzzHostlist(s); break;
  }
  return 0;
}
