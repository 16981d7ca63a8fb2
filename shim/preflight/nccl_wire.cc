#include "shim/preflight/nccl_wire.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "shim/base/parse_int.h"

namespace aml {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string Encode(const std::string& kind, const Fields& fields) {
  std::string s = kind;
  for (const auto& [k, v] : fields) {
    s += "\n" + k + "=";
    for (char c : v) s += c == '\n' ? ' ' : c;
  }
  return s;
}

struct Decoded {
  Fields fields;
  const std::string* Get(const std::string& key) const {
    for (const auto& f : fields)
      if (f.first == key) return &f.second;
    return nullptr;
  }
  std::vector<std::string> All(const std::string& key) const {
    std::vector<std::string> out;
    for (const auto& f : fields)
      if (f.first == key) out.push_back(f.second);
    return out;
  }
  std::string Str(const std::string& key) const {
    const std::string* v = Get(key);
    return v ? *v : "";
  }
};

Result<Decoded> Decode(const std::string& kind, const std::string& frame) {
  std::istringstream in(frame);
  std::string line;
  if (!std::getline(in, line) || line != kind)
    return Error{"expected a '" + kind + "' message, got '" + frame.substr(0, 40) + "'"};
  Decoded d;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error{"malformed line '" + line.substr(0, 40) + "' in a '" + kind + "' message"};
    d.fields.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return d;
}

Result<int64_t> Int(const Decoded& d, const std::string& kind, const std::string& key,
                      int64_t lo, int64_t hi) {
  const std::string* v = d.Get(key);
  if (!v) return Error{"'" + kind + "' message lacks " + key};
  return ParseInt(key, *v, lo, hi);
}

Result<double> Seconds(const Decoded& d, const std::string& key) {
  const std::string* v = d.Get(key);
  if (!v) return -1.0;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') return Error{key + "='" + *v + "' is not a number"};
  return x;
}

std::string Num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

}  // namespace

std::string EncodeSetup(const WorkerSetup& s) {
  Fields f = {{"bytes", std::to_string(s.bytes)},
              {"iters", std::to_string(s.iters)},
              {"make_node_id", s.make_node_id ? "1" : "0"},
              {"make_world_id", s.make_world_id ? "1" : "0"}};
  for (const WorkerSlot& w : s.slots)
    f.emplace_back("slot", std::to_string(w.device) + "," + std::to_string(w.node_rank) + "," +
                               std::to_string(w.node_size) + "," +
                               std::to_string(w.world_rank) + "," +
                               std::to_string(w.world_size));
  return Encode("setup", f);
}

Result<WorkerSetup> DecodeSetup(const std::string& frame) {
  auto d = Decode("setup", frame);
  if (!d.ok()) return d.error();
  WorkerSetup s;
  auto bytes = Int(*d, "setup", "bytes", 4, int64_t{1} << 40);
  auto iters = Int(*d, "setup", "iters", 1, 100000);
  if (!bytes.ok()) return bytes.error();
  if (!iters.ok()) return iters.error();
  s.bytes = static_cast<uint64_t>(*bytes);
  s.iters = static_cast<int>(*iters);
  s.make_node_id = d->Str("make_node_id") == "1";
  s.make_world_id = d->Str("make_world_id") == "1";
  for (const std::string& v : d->All("slot")) {
    WorkerSlot w;
    char tail = 0;
    if (std::sscanf(v.c_str(), "%d,%d,%d,%d,%d%c", &w.device, &w.node_rank, &w.node_size,
                    &w.world_rank, &w.world_size, &tail) != 5 ||
        w.device < 0 || w.node_rank < 0 || w.node_rank >= w.node_size || w.world_rank < 0 ||
        w.world_rank >= w.world_size)
      return Error{"slot='" + v + "' is not device,node_rank,node_size,world_rank,world_size"};
    s.slots.push_back(w);
  }
  if (s.slots.empty()) return Error{"'setup' message has no slot"};
  return s;
}

std::string EncodeReady(const WorkerReady& r) {
  Fields f = {{"ok", r.ok ? "1" : "0"},
              {"error", r.error},
              {"versions", r.versions},
              {"nccl_version", std::to_string(r.nccl_version)},
              {"node_id", r.node_id},
              {"world_id", r.world_id}};
  for (const std::string& p : r.pci) f.emplace_back("pci", p);
  return Encode("ready", f);
}

Result<WorkerReady> DecodeReady(const std::string& frame) {
  auto d = Decode("ready", frame);
  if (!d.ok()) return d.error();
  WorkerReady r;
  r.ok = d->Str("ok") == "1";
  r.error = d->Str("error");
  r.versions = d->Str("versions");
  auto v = Int(*d, "ready", "nccl_version", 0, 1 << 30);
  if (!v.ok()) return v.error();
  r.nccl_version = static_cast<int>(*v);
  r.pci = d->All("pci");
  r.node_id = d->Str("node_id");
  r.world_id = d->Str("world_id");
  if (!r.ok && r.error.empty()) return Error{"'ready' message says not ok without an error"};
  return r;
}

std::string EncodeGo(const WorkerGo& g) {
  return Encode("go", {{"node_id", g.node_id}, {"world_id", g.world_id}});
}

Result<WorkerGo> DecodeGo(const std::string& frame) {
  auto d = Decode("go", frame);
  if (!d.ok()) return d.error();
  WorkerGo g{d->Str("node_id"), d->Str("world_id")};
  if (g.node_id.empty()) return Error{"'go' message has no node_id"};
  return g;
}

std::string EncodeResult(const WorkerResult& r) {
  Fields f = {{"ok", r.ok ? "1" : "0"}, {"error", r.error}};
  if (r.timed_out) f.emplace_back("timed_out", "1");
  if (r.node_s >= 0) f.emplace_back("node_s", Num(r.node_s));
  if (r.world_s >= 0) f.emplace_back("world_s", Num(r.world_s));
  return Encode("result", f);
}

Result<WorkerResult> DecodeResult(const std::string& frame) {
  auto d = Decode("result", frame);
  if (!d.ok()) return d.error();
  WorkerResult r;
  r.ok = d->Str("ok") == "1";
  r.timed_out = d->Str("timed_out") == "1";
  r.error = d->Str("error");
  auto node = Seconds(*d, "node_s");
  auto world = Seconds(*d, "world_s");
  if (!node.ok()) return node.error();
  if (!world.ok()) return world.error();
  r.node_s = *node;
  r.world_s = *world;
  if (!r.ok && r.error.empty()) return Error{"'result' message says not ok without an error"};
  if (r.ok && r.node_s <= 0) return Error{"'result' message says ok without node_s"};
  return r;
}

std::string EncodeGpuHello(const GpuHello& h) {
  std::string ready = EncodeReady(h.ready);
  return Encode("gpu", {{"node", std::to_string(h.node)}, {"gpus", std::to_string(h.gpus)}}) +
         "\n" + ready.substr(ready.find('\n') + 1);
}

Result<GpuHello> DecodeGpuHello(const std::string& frame) {
  auto d = Decode("gpu", frame);
  if (!d.ok()) return d.error();
  GpuHello h;
  auto node = Int(*d, "gpu", "node", 0, 1 << 30);
  auto gpus = Int(*d, "gpu", "gpus", 0, 4096);
  if (!node.ok()) return node.error();
  if (!gpus.ok()) return gpus.error();
  h.node = static_cast<int>(*node);
  h.gpus = static_cast<int>(*gpus);
  auto ready = DecodeReady("ready\n" + frame.substr(frame.find('\n') + 1));
  if (!ready.ok()) return ready.error();
  h.ready = std::move(*ready);
  return h;
}

std::string EncodePhase(const std::string& name) { return Encode("phase", {{"name", name}}); }

std::string PhaseOf(const std::string& frame) {
  auto d = Decode("phase", frame);
  return d.ok() ? d->Str("name") : "";
}

}  // namespace aml
