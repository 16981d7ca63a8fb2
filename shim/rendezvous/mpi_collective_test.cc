#include "shim/rendezvous/mpi_collective.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

TEST(MpiLibrary, TheOneYouNameIsTheOnlyOneTried) {
  auto libs = LibraryCandidates(MpiLibrarySpec(Launcher::kOpenMpi),
                                Env({{"AML_SHIM_LIBMPI", "/opt/mpi/lib/libmpi.so"}}));
  EXPECT_EQ(libs, std::vector<std::string>{"/opt/mpi/lib/libmpi.so"});
  libs = LibraryCandidates(MpiLibrarySpec(Launcher::kHydra), Env({}));
  EXPECT_EQ(libs.front(), "libmpi.so.12");
}

TEST(MpiLibrary, ALibraryOfNeitherAbiIsNamed) {
  auto c = OpenMpiCollective(Env({{"AML_SHIM_LIBMPI", "libm.so.6"}}), Launcher::kOpenMpi);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message,
            "libm.so.6 is not an MPI library aml-shim knows (neither Open MPI's nor MPICH's ABI)");
}

}  // namespace
}  // namespace aml
