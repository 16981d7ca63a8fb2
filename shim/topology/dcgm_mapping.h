// --dcgm-job-dir DIR (docs/metrics.md): the files dcgm-exporter's
// --hpc-job-mapping-dir reads, so that its GPU metrics carry the job's id:
// one file per GPU this node's ranks use, named by the GPU's index (NVML's,
// as DCGM numbers GPUs: PCI bus order among the node's GPUs), holding the
// job's id on one line. Each is written whole (a temporary file renamed) in
// DIR opened without following a link, and removed at the end when it still
// holds this job's id (a later job's is left alone).
#pragma once

#include <string>
#include <vector>

#include "shim/base/result.h"

namespace aml {

class DcgmMapping {
 public:
  DcgmMapping() = default;
  DcgmMapping(DcgmMapping&& o) noexcept;
  DcgmMapping& operator=(DcgmMapping&& o) noexcept;
  DcgmMapping(const DcgmMapping&) = delete;
  DcgmMapping& operator=(const DcgmMapping&) = delete;
  ~DcgmMapping();

  // The error names --dcgm-job-dir, the folder and why.
  static Result<DcgmMapping> Write(const std::string& dir, const std::vector<int>& gpus,
                                   const std::string& job_id);
  // Removes each file that still holds this job's id (also at destruction).
  void Remove();
  const std::vector<std::string>& names() const { return names_; }

 private:
  int dir_fd_ = -1;
  std::string job_line_;
  std::vector<std::string> names_;
};

}  // namespace aml
