#include "shim/base/sha256.h"

#include <gtest/gtest.h>

#include "shim/base/hex.h"

namespace aml {
namespace {

std::string HexSha(const std::string& s) {
  const auto d = Sha256(s);
  return Hex(d.data(), d.size());
}

// FIPS 180-4's examples, and lengths around the padding's block boundary.
TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(HexSha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexSha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexSha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(HexSha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(HexSha(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(HexSha(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(HexSha(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, EachPurposeGetsItsOwnDigest) {
  const std::string a = SecretDigest("preflight", "s3cret");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, SecretDigest("reach", "s3cret"));
  EXPECT_NE(a, SecretDigest("preflight", "s3cret2"));
  EXPECT_EQ(a, SecretDigest("preflight", "s3cret"));
}

}  // namespace
}  // namespace aml
