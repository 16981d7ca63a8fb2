#include "shim/base/proof.h"

#include <gtest/gtest.h>

#include "shim/base/hex.h"
#include "shim/base/sha256.h"

namespace aml {
namespace {

// RFC 4231, test cases 1 and 2.
TEST(HmacSha256, MatchesRfc4231) {
  auto d = HmacSha256(std::string(20, '\x0b'), "Hi There");
  EXPECT_EQ(Hex(d.data(), d.size()),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  d = HmacSha256("Jefe", "what do ya want for nothing?");
  EXPECT_EQ(Hex(d.data(), d.size()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than a block is hashed first (test case 6).
  d = HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First");
  EXPECT_EQ(Hex(d.data(), d.size()),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(ConnectionProof, IsBoundToBothNoncesTheDoorTheDirectionAndTheRanks) {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  const std::string p = ConnectionProof(secret, "control-plane", ProofDirection::kUp, "s1", "c1", "3");
  EXPECT_EQ(p.size(), 64u);
  EXPECT_EQ(p, ConnectionProof(secret, "control-plane", ProofDirection::kUp, "s1", "c1", "3"));
  for (const std::string& other :
       {ConnectionProof(secret, "control-plane", ProofDirection::kUp, "s2", "c1", "3"),
        ConnectionProof(secret, "control-plane", ProofDirection::kUp, "s1", "c2", "3"),
        ConnectionProof(secret, "control-plane", ProofDirection::kUp, "s1", "c1", "4"),
        ConnectionProof(secret, "control-plane", ProofDirection::kDown, "s1", "c1", "3"),
        ConnectionProof(secret, "preflight", ProofDirection::kUp, "s1", "c1", "3"),
        ConnectionProof(secret + "x", "control-plane", ProofDirection::kUp, "s1", "c1", "3")})
    EXPECT_NE(p, other);
  // No secret: nothing to prove.
  EXPECT_EQ(ConnectionProof("", "control-plane", ProofDirection::kUp, "s1", "c1", "3"), "-");
}

TEST(ConnectionProof, NoncesAreFreshAndComparisonIsExact) {
  const std::string a = NewNonce(), b = NewNonce();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(SameProof(a, a));
  EXPECT_FALSE(SameProof(a, b));
  EXPECT_FALSE(SameProof(a, a.substr(1)));
}

}  // namespace
}  // namespace aml
