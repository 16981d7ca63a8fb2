#include "shim/pmix/client.h"

#include <gtest/gtest.h>

#include <map>

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

TEST(PmixServerOffered, NeedsTheNamespaceTheRankAndAServerUri) {
  EXPECT_TRUE(PmixServerOffered(
      Env({{"PMIX_NAMESPACE", "prterun-h-1@1"}, {"PMIX_RANK", "0"}, {"PMIX_SERVER_URI41", "pmix-server.1;tcp4://127.0.0.1:1"}})));
  EXPECT_TRUE(PmixServerOffered(
      Env({{"PMIX_NAMESPACE", "slurm.pmix.7.0"}, {"PMIX_RANK", "3"}, {"PMIX_SERVER_URI2", "x"}})));
  EXPECT_FALSE(PmixServerOffered(Env({{"PMIX_NAMESPACE", "n"}, {"PMIX_RANK", "0"}})));
  EXPECT_FALSE(PmixServerOffered(Env({{"PMIX_RANK", "0"}, {"PMIX_SERVER_URI41", "x"}})));
  EXPECT_FALSE(PmixServerOffered(Env({{"PMIX_NAMESPACE", ""}, {"PMIX_RANK", "0"}, {"PMIX_SERVER_URI41", "x"}})));
}

TEST(PmixClient, ALibraryThatIsNotPmixIsNamedWithWhatItLacks) {
  auto c = PmixClient::Open(Env({{"AML_SHIM_LIBPMIX", "libm.so.6"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message,
            "libm.so.6 is not libpmix (a PMIx client library): it lacks PMIx_Init, "
            "PMIx_Finalize, PMIx_Get, PMIx_Put, PMIx_Commit, PMIx_Fence, PMIx_Error_string");
}

TEST(PmixClient, AMissingOverrideIsNamed) {
  auto c = PmixClient::Open(Env({{"AML_SHIM_LIBPMIX", "/nonexistent/libpmix.so.2"}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind("AML_SHIM_LIBPMIX='/nonexistent/libpmix.so.2' cannot be "
                                    "loaded: /nonexistent/libpmix.so.2: cannot open",
                                    0),
            0u)
      << c.error().message;
}

}  // namespace
}  // namespace aml
