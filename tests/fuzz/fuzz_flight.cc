// libFuzzer entry for the flight recorder's reader (launch/flight): any
// bytes as a rank's dump. The reader may refuse them, in one line, but
// never crash, recurse without bound or grow past its caps; a summary it
// makes crosses the wire whole and the verdict over it is one line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "launch/flight/culprit.h"
#include "launch/flight/fr_dump.h"

namespace {

// (The line of a check that fails is printed before the abort.)
#define Check(ok) CheckAt((ok), __LINE__)
void CheckAt(bool ok, int line) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_flight.cc:%d: check failed\n", line);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view dump(reinterpret_cast<const char*>(data), size);
  auto s = aml::SummarizeDump(dump, 3);
  if (!s.ok()) {
    Check(s.error().message.find('\n') == std::string::npos);
    return 0;
  }
  Check(s->groups.size() <= aml::kMaxGroups);
  const std::string json = aml::FrSummaryJson(*s);
  Check(json.size() <= aml::kMaxFrWire || s->groups.empty());
  auto back = aml::ParseFrSummary(json);
  Check(back.ok() && aml::FrSummaryJson(*back) == json);
  // Two ranks: this one and a copy one collective behind.
  aml::RankFlight a, b;
  a.rank = 3;
  a.fr = *s;
  b.rank = 4;
  b.fr = *s;
  for (aml::FrGroup& g : b.fr->groups) g.enqueued = g.enqueued > 0 ? g.enqueued - 1 : g.enqueued;
  const std::string line = aml::CulpritLine(aml::FindCulprit({a, b}, 8));
  Check(!line.empty() && line.find('\n') == line.size() - 1);
  return 0;
}
