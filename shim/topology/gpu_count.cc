#include "shim/topology/gpu_count.h"

#include <dirent.h>

#include <cctype>

namespace aml {

int CountCudaVisibleDevices(const std::string& value) {
  int n = 0;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string item = value.substr(start, comma - start);
    // An index ("3") or a UUID ("GPU-8f2e...", "MIG-..."); CUDA stops at the
    // first entry that is neither.
    bool index = !item.empty();
    for (char c : item) index &= std::isdigit(static_cast<unsigned char>(c)) != 0;
    bool uuid = item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0;
    if (!index && !uuid) break;
    ++n;
    start = comma + 1;
  }
  return n;
}

GpuCount CountVisibleGpus(const EnvSnapshot& env, const std::string& proc_root) {
  if (const std::string* v = env.Find("CUDA_VISIBLE_DEVICES"))
    return {CountCudaVisibleDevices(*v), "CUDA_VISIBLE_DEVICES=" + *v};
  std::string dir = proc_root + "/driver/nvidia/gpus";
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
    return {n, std::to_string(n) + " entries in " + dir};
  }
  return {0, "no " + dir + " (no NVIDIA driver)"};
}

}  // namespace aml
