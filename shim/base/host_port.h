// "host", "host:port", "[v6]", "[v6]:port" and bare IPv6 ("fe80::1"), as
// found in AZ_BATCH_MASTER_NODE and similar variables.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "shim/base/result.h"

namespace aml {

struct HostPort {
  std::string host;         // without brackets
  std::optional<int> port;  // 1..65535 when present
};

// `what` names the variable for the error message.
Result<HostPort> ParseHostPort(std::string_view what, std::string_view text);

// A host name or address as given ("[v6]" too): not empty, no space,
// control character, '/', quote or '@'. The error names `what`:
// "MASTER_ADDR='a\nb' is not a host name or address".
Status CheckHost(std::string_view what, std::string_view text);

// Brackets an IPv6 literal for "host:port" display.
std::string JoinHostPort(const std::string& host, int port);

}  // namespace aml
