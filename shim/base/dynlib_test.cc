#include "shim/base/dynlib.h"

#include <gtest/gtest.h>

#include <map>

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> m) { return EnvSnapshot(std::move(m)); }

LibrarySpec Libm() {
  return LibrarySpec{"the C math library", "AML_SHIM_LIBTEST", {"libnothere.so.9", "libm.so.6"},
                     "", false};
}

TEST(Dynlib, TheFirstCandidateThatOpensIsLoaded) {
  auto lib = OpenLibrary(Libm(), Env({}));
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_EQ(lib->file(), "libm.so.6");
  double (*cos_fn)(double) = nullptr;
  ASSERT_TRUE(lib->Bind({Sym("cos", &cos_fn)}).ok());
  EXPECT_EQ(cos_fn(0.0), 1.0);
}

TEST(Dynlib, TheOverrideIsTheOnlyFileTried) {
  auto lib = OpenLibrary(Libm(), Env({{"AML_SHIM_LIBTEST", "libnothere.so.9"}}));
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().message.rfind("AML_SHIM_LIBTEST='libnothere.so.9' cannot be loaded: ", 0),
            0u)
      << lib.error().message;
}

TEST(Dynlib, NothingFoundSaysWhatWasTriedAndWhatToSet) {
  LibrarySpec spec = Libm();
  spec.candidates = {"libnothere.so.9"};
  spec.hint = "e.g. the one your launcher uses";
  auto lib = OpenLibrary(spec, Env({}));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("the C math library was not found (libnothere.so.9"),
            std::string::npos);
  EXPECT_NE(lib.error().message.find(
                "); set AML_SHIM_LIBTEST to its path, e.g. the one your launcher uses"),
            std::string::npos)
      << lib.error().message;
}

TEST(Dynlib, BindingIsAllOrNothing) {
  auto lib = OpenLibrary(Libm(), Env({}));
  ASSERT_TRUE(lib.ok());
  double (*cos_fn)(double) = nullptr;
  void (*a)() = nullptr;
  void (*b)() = nullptr;
  auto st = lib->Bind({Sym("cos", &cos_fn), Sym("no_such_a", &a), Sym("no_such_b", &b)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "libm.so.6 is not the C math library: it lacks no_such_a, no_such_b");
  EXPECT_EQ(cos_fn, nullptr);
}

TEST(Dynlib, AnOverrideSetButEmptyOrUnreadableIsRefusedAtStart) {
  EXPECT_TRUE(CheckLibraryOverride(Env({}), "AML_SHIM_LIBTEST").ok());
  EXPECT_TRUE(CheckLibraryOverride(Env({{"AML_SHIM_LIBTEST", "libm.so.6"}}), "AML_SHIM_LIBTEST").ok());
  auto empty = CheckLibraryOverride(Env({{"AML_SHIM_LIBTEST", ""}}), "AML_SHIM_LIBTEST");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message,
            "AML_SHIM_LIBTEST is set but empty: unset it, or name the library's file");
  auto missing = CheckLibraryOverride(Env({{"AML_SHIM_LIBTEST", "/nonexistent/lib.so"}}),
                                      "AML_SHIM_LIBTEST");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "AML_SHIM_LIBTEST='/nonexistent/lib.so': No such file or directory");
}

}  // namespace
}  // namespace aml
