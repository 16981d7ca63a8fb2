#include "shim/rendezvous/mpi_collective.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

TEST(MpiLibrary, TheOneYouNameIsTheOnlyOneTried) {
  auto libs = MpiLibraryCandidates(Env({{"AML_SHIM_LIBMPI", "/opt/mpi/lib/libmpi.so"}}),
                                   Launcher::kOpenMpi);
  EXPECT_EQ(libs, std::vector<std::string>{"/opt/mpi/lib/libmpi.so"});
  libs = MpiLibraryCandidates(Env({}), Launcher::kHydra);
  EXPECT_EQ(libs.front(), "libmpi.so.12");
}

TEST(MpiLibrary, AMissingPathIsAnErrorNamingIt) {
  auto st = CheckLibMpiOverride(Env({{"AML_SHIM_LIBMPI", "/nonexistent/libmpi.so"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "AML_SHIM_LIBMPI='/nonexistent/libmpi.so': No such file or directory");
  st = CheckLibMpiOverride(Env({{"AML_SHIM_LIBMPI", ""}}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "AML_SHIM_LIBMPI is set but empty: unset it or name the libmpi");
  EXPECT_TRUE(CheckLibMpiOverride(Env({{"AML_SHIM_LIBMPI", "libmpi.so.40"}})).ok());
  EXPECT_TRUE(CheckLibMpiOverride(Env({})).ok());
}

}  // namespace
}  // namespace aml
