// Times the fabric probe in-process: sysfs probe + env plan on a fixture
// tree, against libibverbs' enumeration (dlopen + ibv_get_device_list +
// queries), the work `ibv_devinfo` does. Prints one JSON line.
//   aml_probe_bench <sysfs-root> [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ib/fabric_env.h"
#include "ib/probe.h"
#include "ib/verbs.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT [ITERATIONS]\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 200;
  using clock = std::chrono::steady_clock;
  size_t devices = 0;
  bool usable = false;
  auto t0 = clock::now();
  for (int i = 0; i < n; ++i) {
    aml::FabricReport r = aml::ProbeSysfs(root);
    aml::FabricPlan p = aml::PlanFabric(r, aml::EnvSnapshot(), aml::NcclConf());
    devices = r.devices.size();
    usable = p.usable;
  }
  double probe_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count() / n;
  // The first libibverbs call pays dlopen and provider loading, as a fresh
  // ibv_devinfo process does.
  auto t1 = clock::now();
  aml::VerbsResult v = aml::QueryVerbs(aml::EnvSnapshot());
  double verbs_first_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  std::printf("{\"sysfs_root\":\"%s\",\"devices\":%zu,\"probe_ms\":%.4f,\"iterations\":%d,"
              "\"usable\":%s,\"verbs_loaded\":%s,\"verbs_first_call_ms\":%.3f,\"verbs\":\"%s\"}\n",
              root.c_str(), devices, probe_ms, n, usable ? "true" : "false", v.loaded ? "true" : "false", verbs_first_ms,
              v.message.c_str());
  return 0;
}
