// Bytes as lower-case hex and back (tokens, NCCL unique ids on the wire).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace aml {

std::string Hex(const void* data, size_t n);
// Empty on malformed input.
std::vector<unsigned char> Unhex(const std::string& hex);

}  // namespace aml
