// Unguessable names and secrets: 16 bytes from the kernel, as hex.
#pragma once

#include <string>

namespace aml {

// 32 hex digits from getrandom(2) (the clock and pid if it fails).
std::string RandomToken();

}  // namespace aml
