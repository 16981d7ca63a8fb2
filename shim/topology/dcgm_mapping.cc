#include "shim/topology/dcgm_mapping.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shim/base/read_no_follow.h"

namespace aml {
namespace {

constexpr size_t kMaxJobLine = 4096;

Status WriteWhole(int dir_fd, const std::string& name, const std::string& text) {
  const std::string tmp = "." + name + ".aml-shim." + std::to_string(getpid());
  const int fd = openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0644);
  if (fd < 0) return Error{tmp + ": " + std::strerror(errno)};
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int e = errno;
  close(fd);
  if (!ok || renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    const int why = ok ? errno : e;
    unlinkat(dir_fd, tmp.c_str(), 0);
    return Error{name + ": " + std::strerror(why)};
  }
  return Ok{};
}

}  // namespace

DcgmMapping::DcgmMapping(DcgmMapping&& o) noexcept
    : dir_fd_(o.dir_fd_), job_line_(std::move(o.job_line_)), names_(std::move(o.names_)) {
  o.dir_fd_ = -1;
  o.names_.clear();
}

DcgmMapping& DcgmMapping::operator=(DcgmMapping&& o) noexcept {
  if (this != &o) {
    Remove();
    dir_fd_ = o.dir_fd_;
    job_line_ = std::move(o.job_line_);
    names_ = std::move(o.names_);
    o.dir_fd_ = -1;
    o.names_.clear();
  }
  return *this;
}

DcgmMapping::~DcgmMapping() { Remove(); }

Result<DcgmMapping> DcgmMapping::Write(const std::string& dir, const std::vector<int>& gpus,
                                       const std::string& job_id) {
  const std::string what = "--dcgm-job-dir " + dir;
  if (job_id.empty() || job_id.find('\n') != std::string::npos || job_id.size() >= kMaxJobLine)
    return Error{what + ": the job's id '" + job_id + "' cannot be one line of the mapping"};
  DcgmMapping m;
  m.dir_fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (m.dir_fd_ < 0)
    return Error{what + ": " + (errno == ELOOP || errno == ENOTDIR
                                    ? std::string("not a folder (a link is not followed)")
                                    : std::string(std::strerror(errno)))};
  m.job_line_ = job_id + "\n";
  for (int gpu : gpus) {
    if (gpu < 0) continue;
    const std::string name = std::to_string(gpu);
    Status st = WriteWhole(m.dir_fd_, name, m.job_line_);
    if (!st.ok()) return Error{what + ": cannot write " + st.error().message};
    m.names_.push_back(name);
  }
  return m;
}

void DcgmMapping::Remove() {
  for (const std::string& name : names_)
    if (ReadNoFollow(dir_fd_, name, kMaxJobLine) == job_line_) unlinkat(dir_fd_, name.c_str(), 0);
  names_.clear();
  if (dir_fd_ >= 0) close(dir_fd_);
  dir_fd_ = -1;
}

}  // namespace aml
