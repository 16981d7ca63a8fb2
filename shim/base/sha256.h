// SHA-256 (FIPS 180-4), for the digests that prove membership in a job
// (shim/preflight/membership.h, shim/rendezvous/token_server.h): a stranger who
// sees one digest of a secret can neither recover the secret nor derive
// another digest of it. No library: the shim links nothing but libc.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace aml {

std::array<uint8_t, 32> Sha256(const std::string& data);

// Lower-case hex of SHA-256("aml-shim:" + purpose + ":" + secret): one
// purpose's digest says nothing about another's.
std::string SecretDigest(const std::string& purpose, const std::string& secret);

// HMAC-SHA256 (RFC 2104) of `message` under `key`.
std::array<uint8_t, 32> HmacSha256(const std::string& key, const std::string& message);

}  // namespace aml
