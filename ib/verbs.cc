#include "ib/verbs.h"

#include "ib/verbs_abi.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>

namespace aml {
namespace {

using GetDeviceList = void** (*)(int*);
using FreeDeviceList = void (*)(void**);
using GetDeviceName = const char* (*)(void*);
using OpenDevice = void* (*)(void*);
using CloseDevice = int (*)(void*);
using QueryDevice = int (*)(void*, void*);
using QueryPort = int (*)(void*, uint8_t, void*);

}  // namespace

VerbsResult QueryVerbs() {
  VerbsResult result;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    result.message = std::string("libibverbs.so.1 not loaded (") + dlerror() + ")";
    return result;
  }
  auto get_list = reinterpret_cast<GetDeviceList>(dlsym(lib, "ibv_get_device_list"));
  auto free_list = reinterpret_cast<FreeDeviceList>(dlsym(lib, "ibv_free_device_list"));
  auto get_name = reinterpret_cast<GetDeviceName>(dlsym(lib, "ibv_get_device_name"));
  auto open_dev = reinterpret_cast<OpenDevice>(dlsym(lib, "ibv_open_device"));
  auto close_dev = reinterpret_cast<CloseDevice>(dlsym(lib, "ibv_close_device"));
  auto query_dev = reinterpret_cast<QueryDevice>(dlsym(lib, "ibv_query_device"));
  auto query_port = reinterpret_cast<QueryPort>(dlsym(lib, "ibv_query_port"));
  if (!get_list || !free_list || !get_name || !open_dev || !close_dev || !query_dev ||
      !query_port) {
    result.message = "libibverbs.so.1 lacks the expected symbols";
    dlclose(lib);
    return result;
  }
  result.loaded = true;
  int n = 0;
  void** list = get_list(&n);
  for (int i = 0; list && i < n; ++i) {
    void* ctx = open_dev(list[i]);
    if (!ctx) continue;
    alignas(8) unsigned char dev_attr[1024] = {};
    int ports = 1;
    if (query_dev(ctx, dev_attr) == 0)
      ports = reinterpret_cast<DeviceAttrPrefix*>(dev_attr)->phys_port_cnt;
    for (int p = 1; p <= ports; ++p) {
      alignas(8) unsigned char attr[512] = {};
      if (query_port(ctx, static_cast<uint8_t>(p), attr) != 0) continue;
      auto* a = reinterpret_cast<PortAttrPrefix*>(attr);
      result.ports.push_back({get_name(list[i]), p, static_cast<int>(a->state), a->link_layer});
    }
    close_dev(ctx);
  }
  if (list) free_list(list);
  result.message = "libibverbs: " + std::to_string(n) + " device(s)";
  // Keep the library loaded: providers register destructors.
  return result;
}

void CrossCheckWithVerbs(FabricReport& report, const VerbsResult& verbs) {
  report.verbs = verbs.message;
  if (!verbs.loaded) return;
  for (const IbDevice& d : report.devices) {
    for (const IbPort& p : d.ports) {
      bool found = false;
      for (const VerbsPort& v : verbs.ports) {
        if (v.device != d.name || v.port != p.port) continue;
        found = true;
        bool verbs_active = v.state == kIbvPortActive;
        if (verbs_active != p.active())
          report.warnings.push_back(d.name + ":" + std::to_string(p.port) + " is " + p.state +
                                    " in sysfs but libibverbs reports state " +
                                    std::to_string(v.state));
      }
      if (!found)
        report.warnings.push_back(d.name + ":" + std::to_string(p.port) +
                                  " is in sysfs but not in libibverbs' device list "
                                  "(missing rdma-core provider, or a container without /dev/infiniband?)");
    }
  }
}

}  // namespace aml
