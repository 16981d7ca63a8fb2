#include "shim/base/host_port.h"

#include "shim/base/parse_int.h"

namespace aml {
namespace {

bool ValidHostChars(std::string_view host) {
  for (unsigned char c : host) {
    if (c <= ' ' || c == 0x7f || c == '/' || c == '[' || c == ']' ||
        c == '@' || c == '"' || c == '\'')
      return false;
  }
  return true;
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view what, std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Error{std::string(what) + "='" + std::string(text) + "' " + why};
  };
  HostPort hp;
  std::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos)
      return fail("has '[' without a closing ']'");
    hp.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return fail("has text after ']' that is not ':port'");
      port_text = rest.substr(1);
      has_port = true;
    }
    if (hp.host.find(':') == std::string::npos)
      return fail("brackets a host that is not an IPv6 address");
  } else {
    size_t first = text.find(':');
    size_t last = text.rfind(':');
    if (first != last) {
      // Two or more colons without brackets: a bare IPv6 address, no port.
      hp.host = std::string(text);
    } else if (first != std::string_view::npos) {
      hp.host = std::string(text.substr(0, first));
      port_text = text.substr(first + 1);
      has_port = true;
    } else {
      hp.host = std::string(text);
    }
  }
  if (hp.host.empty()) return fail("has an empty host");
  if (!ValidHostChars(hp.host)) return fail("has a malformed host");
  if (has_port) {
    auto port = ParseInt(what, port_text, 1, 65535);
    if (!port.ok()) return fail("has a bad port '" + std::string(port_text) +
                                "' (expected 1..65535)");
    hp.port = static_cast<int>(*port);
  }
  return hp;
}

Status CheckHost(std::string_view what, std::string_view text) {
  std::string_view host = text;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || !ValidHostChars(host))
    return Error{std::string(what) + "='" + std::string(text) + "' is not a host name or address"};
  return Ok{};
}

std::string JoinHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos)
    return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace aml
