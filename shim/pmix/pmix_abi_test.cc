#include "shim/pmix/pmix_abi.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#ifdef AML_PMIX_INCLUDE
#include <pmix_common.h>
#endif

namespace aml::pmix {
namespace {

#ifdef AML_PMIX_INCLUDE
TEST(PmixAbi, LayoutsMatchTheInstalledHeader) {
  EXPECT_EQ(sizeof(Proc), sizeof(pmix_proc_t));
  EXPECT_EQ(offsetof(Proc, rank), offsetof(pmix_proc_t, rank));
  EXPECT_EQ(sizeof(Value), sizeof(pmix_value_t));
  EXPECT_EQ(offsetof(Value, data), offsetof(pmix_value_t, data));
  EXPECT_EQ(sizeof(Info), sizeof(pmix_info_t));
  EXPECT_EQ(offsetof(Info, flags), offsetof(pmix_info_t, flags));
  EXPECT_EQ(offsetof(Info, value), offsetof(pmix_info_t, value));
  EXPECT_EQ(sizeof(ByteObject), sizeof(pmix_byte_object_t));
}

TEST(PmixAbi, ConstantsMatchTheInstalledHeader) {
  EXPECT_EQ(kRankWildcard, static_cast<uint32_t>(PMIX_RANK_WILDCARD));
  EXPECT_EQ(kBool, PMIX_BOOL);
  EXPECT_EQ(kString, PMIX_STRING);
  EXPECT_EQ(kUint16, PMIX_UINT16);
  EXPECT_EQ(kUint32, PMIX_UINT32);
  EXPECT_EQ(kByteObject, PMIX_BYTE_OBJECT);
  EXPECT_EQ(kScopeGlobal, PMIX_GLOBAL);
  EXPECT_STREQ(kJobSize, PMIX_JOB_SIZE);
  EXPECT_STREQ(kLocalSize, PMIX_LOCAL_SIZE);
  EXPECT_STREQ(kLocalRank, PMIX_LOCAL_RANK);
  EXPECT_STREQ(kHostname, PMIX_HOSTNAME);
  EXPECT_STREQ(kLocalPeers, PMIX_LOCAL_PEERS);
  EXPECT_STREQ(kCollectData, PMIX_COLLECT_DATA);
}
#endif

// Without the header, the sizes PMIx 3 to 5 have on x86-64.
TEST(PmixAbi, SizesOnX86_64) {
  EXPECT_EQ(sizeof(Proc), 260u);
  EXPECT_EQ(sizeof(Value), 32u);
  EXPECT_EQ(sizeof(Info), 552u);
}

}  // namespace
}  // namespace aml::pmix
