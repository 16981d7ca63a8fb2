#include "ib/verbs.h"

#include "ib/verbs_abi.h"

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

LibrarySpec VerbsSpec() {
  return LibrarySpec{"libibverbs", "AML_SHIM_LIBIBVERBS", {"libibverbs.so.1"},
                     "e.g. rdma-core's libibverbs.so.1", false};
}

VerbsResult QueryVerbs(const EnvSnapshot& env) {
  VerbsResult result;
  auto lib = OpenLibrary(VerbsSpec(), env);
  if (!lib.ok()) {
    result.message = lib.error().message;
    return result;
  }
  GetDeviceList get_list = nullptr;
  FreeDeviceList free_list = nullptr;
  GetDeviceName get_name = nullptr;
  OpenDevice open_dev = nullptr;
  CloseDevice close_dev = nullptr;
  QueryDevice query_dev = nullptr;
  QueryPort query_port = nullptr;
  auto bound = lib->Bind({Sym("ibv_get_device_list", &get_list),
                          Sym("ibv_free_device_list", &free_list),
                          Sym("ibv_get_device_name", &get_name), Sym("ibv_open_device", &open_dev),
                          Sym("ibv_close_device", &close_dev),
                          Sym("ibv_query_device", &query_dev), Sym("ibv_query_port", &query_port)});
  if (!bound.ok()) {
    result.message = bound.error().message;
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
