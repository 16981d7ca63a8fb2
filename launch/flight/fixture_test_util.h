// For the flight recorder's unit tests: a file of tests/fixtures/flight
// (real dumps and NCCL RAS answers, tests/fixtures/flight/README.md).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace aml {

inline std::string FlightFixture(const std::string& name) {
  std::ifstream in(std::string(AML_FIXTURES_DIR) + "/flight/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace aml
