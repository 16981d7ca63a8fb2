#include "shim/topology/dcgm_mapping.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace aml {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dcgm_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string Slurp(const std::string& name) const {
    std::ifstream in(path + "/" + name);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool Has(const std::string& name) const { return access((path + "/" + name).c_str(), F_OK) == 0; }
};

TEST(DcgmMapping, OneFilePerGpuHoldingTheJobsIdRemovedAtTheEnd) {
  TempDir d;
  {
    auto m = DcgmMapping::Write(d.path, {2, 3}, "slurm-4711");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(d.Slurp("2"), "slurm-4711\n");
    EXPECT_EQ(d.Slurp("3"), "slurm-4711\n");
    EXPECT_FALSE(d.Has("0"));
  }
  EXPECT_FALSE(d.Has("2"));
  EXPECT_FALSE(d.Has("3"));
}

TEST(DcgmMapping, ALaterJobsFileIsLeftAlone) {
  TempDir d;
  auto m = DcgmMapping::Write(d.path, {0}, "job-a");
  ASSERT_TRUE(m.ok());
  std::ofstream(d.path + "/0") << "job-b\n";
  m->Remove();
  EXPECT_EQ(d.Slurp("0"), "job-b\n");
}

TEST(DcgmMapping, ALinkOrAMissingFolderOrABadIdIsRefusedWithTheOption) {
  TempDir d;
  const std::string link = d.path + "/link";
  ASSERT_EQ(symlink("/etc", link.c_str()), 0);
  for (const std::string& dir : {link, d.path + "/none"}) {
    auto m = DcgmMapping::Write(dir, {0}, "job");
    ASSERT_FALSE(m.ok()) << dir;
    EXPECT_EQ(m.error().message.rfind("--dcgm-job-dir " + dir + ": ", 0), 0u) << m.error().message;
  }
  auto bad = DcgmMapping::Write(d.path, {0}, "a\nb");
  ASSERT_FALSE(bad.ok());
  // A planted link where a file goes is replaced, never written through.
  ASSERT_EQ(symlink("/etc/passwd", (d.path + "/1").c_str()), 0);
  auto m = DcgmMapping::Write(d.path, {1}, "job");
  ASSERT_TRUE(m.ok()) << m.error().message;
  struct stat st {};
  ASSERT_EQ(lstat((d.path + "/1").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

}  // namespace
}  // namespace aml
