#include "shim/pmix/client.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "shim/base/bounded_call.h"
#include "shim/base/descriptors.h"
#include "shim/base/log.h"
#include "shim/base/units.h"

namespace aml {
namespace {

// Frees what PMIx_Get allocated (with the process's malloc, as PMIx does).
void FreeValue(pmix::Value* v) {
  if (!v) return;
  if (v->type == pmix::kString) std::free(v->data.string);
  if (v->type == pmix::kByteObject) std::free(v->data.bo.bytes);
  std::free(v);
}

void SetKey(pmix::Info& info, const char* key) {
  std::memset(&info, 0, sizeof info);
  std::strncpy(info.key, key, pmix::kMaxKeyLen);
}

}  // namespace

bool PmixServerOffered(const EnvSnapshot& env) {
  if (!env.HasNonEmpty("PMIX_NAMESPACE") || !env.HasNonEmpty("PMIX_RANK")) return false;
  for (const char* uri : {"PMIX_SERVER_URI", "PMIX_SERVER_URI2", "PMIX_SERVER_URI21",
                          "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41"})
    if (env.HasNonEmpty(uri)) return true;
  return false;
}

std::string PmixServerNamed(const EnvSnapshot& env) {
  for (const char* uri : {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
                          "PMIX_SERVER_URI21", "PMIX_SERVER_URI2", "PMIX_SERVER_URI"})
    if (env.HasNonEmpty(uri)) return std::string(uri) + "='" + env.GetOr(uri, "") + "'";
  return "(no PMIX_SERVER_URI)";
}

LibrarySpec PmixLibrarySpec() {
  return LibrarySpec{"libpmix (a PMIx client library)",
                     "AML_SHIM_LIBPMIX",
                     {"libpmix.so.2", "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2"},
                     "e.g. the libpmix.so.2 your Open MPI or Slurm uses",
                     false};
}

Result<std::unique_ptr<PmixClient>> PmixClient::Open(const EnvSnapshot& env, double init_s,
                                                     bool* reached_server) {
  if (reached_server) *reached_server = false;
  auto lib = OpenLibrary(PmixLibrarySpec(), env);
  if (!lib.ok()) return lib.error();
  std::unique_ptr<PmixClient> c(new PmixClient());
  c->library_ = lib->file();
  auto bound = lib->Bind({Sym("PMIx_Init", &c->init_), Sym("PMIx_Finalize", &c->finalize_),
                          Sym("PMIx_Get", &c->get_), Sym("PMIx_Put", &c->put_),
                          Sym("PMIx_Commit", &c->commit_), Sym("PMIx_Fence", &c->fence_),
                          Sym("PMIx_Error_string", &c->error_string_)});
  if (!bound.ok()) return bound.error();
  // PMIx_Init runs in a thread of its own, waited for at most init_s. One
  // that never returns is left blocked (the library stays loaded; nothing of
  // it is used again): the process goes on without PMIx. The library's
  // progress thread, started from there, blocks every signal.
  struct InitCall {
    int rc = 0;
    pmix::Proc self{};
  };
  auto call = std::make_shared<InitCall>();
  if (reached_server) *reached_server = true;
  const std::vector<int> before = OpenDescriptors();
  const bool returned = CallWithin(init_s, [call, init = c->init_] {
    call->rc = init(&call->self, nullptr, 0);
  });
  if (!returned)
    return Error{"PMIx_Init in " + c->library_ + " did not return within " +
                 FormatRate(init_s) + " s: the PMIx server at " + PmixServerNamed(env) +
                 " did not answer (a stale URI, whose port another service took?)"};
  if (call->rc != pmix::kSuccess)
    return Error{c->Why("PMIx_Init", call->rc) + " (the server at " + PmixServerNamed(env) + ")"};
  c->self_ = call->self;
  c->initialised_ = true;
  // Its socket to the server and its shared-memory files are libpmix's,
  // opened without close-on-exec: the commands must not inherit them.
  CloseOnExecSince(before);
  return c;
}

PmixClient::~PmixClient() {
  if (!initialised_) return;
  // A server that never answers must not keep this process (and the
  // launcher's job) alive: the call is left behind, as PMIx_Init's is.
  if (!CallWithin(kFinalizeS, [fin = finalize_] { fin(nullptr, 0); }))
    LogWarning("PMIx_Finalize in " + library_ + " did not return within " +
               FormatRate(kFinalizeS) + " s; leaving without it");
}

std::string PmixClient::Why(const char* call, int status) const {
  const char* text = error_string_ ? error_string_(status) : nullptr;
  return std::string(call) + " failed in " + library_ + ": " +
         (text ? text : "status " + std::to_string(status));
}

pmix::Proc PmixClient::ProcOf(std::optional<int> rank) const {
  pmix::Proc p = self_;
  p.rank = rank ? static_cast<uint32_t>(*rank) : pmix::kRankWildcard;
  return p;
}

Result<pmix::Value*> PmixClient::Get(const pmix::Proc& proc, const char* key) const {
  pmix::Value* v = nullptr;
  int rc = get_(&proc, key, nullptr, 0, &v);
  if (rc != pmix::kSuccess || !v) {
    FreeValue(v);
    return Error{Why(("PMIx_Get(" + std::string(key) + ")").c_str(), rc)};
  }
  return v;
}

Result<uint32_t> PmixClient::GetUint(std::optional<int> rank, const char* key) const {
  auto v = Get(ProcOf(rank), key);
  if (!v.ok()) return v.error();
  const uint16_t type = (*v)->type;
  uint32_t out = type == pmix::kUint32 ? (*v)->data.uint32
                 : type == pmix::kUint16 ? (*v)->data.uint16
                                         : UINT32_MAX;
  FreeValue(*v);
  if (out == UINT32_MAX)
    return Error{"PMIx_Get(" + std::string(key) + ") in " + library_ + " gave type " +
                 std::to_string(type) + ", not an unsigned integer"};
  return out;
}

Result<std::string> PmixClient::GetString(std::optional<int> rank, const char* key) const {
  auto v = Get(ProcOf(rank), key);
  if (!v.ok()) return v.error();
  const bool is_string = (*v)->type == pmix::kString && (*v)->data.string;
  std::string out = is_string ? (*v)->data.string : "";
  FreeValue(*v);
  if (!is_string)
    return Error{"PMIx_Get(" + std::string(key) + ") in " + library_ + " gave no string"};
  return out;
}

Result<std::string> PmixClient::GetBytes(int rank, const std::string& key) const {
  auto v = Get(ProcOf(rank), key.c_str());
  if (!v.ok()) return v.error();
  const bool is_bytes = (*v)->type == pmix::kByteObject;
  std::string out = is_bytes && (*v)->data.bo.bytes
                        ? std::string((*v)->data.bo.bytes, (*v)->data.bo.size)
                        : std::string();
  FreeValue(*v);
  if (!is_bytes)
    return Error{"PMIx_Get(" + key + ") of rank " + std::to_string(rank) + " gave no bytes"};
  return out;
}

Status PmixClient::Put(const std::string& key, const std::string& bytes) {
  pmix::Value v{};
  v.type = pmix::kByteObject;
  // PMIx copies the value; it does not keep or free this pointer.
  v.data.bo.bytes = const_cast<char*>(bytes.data());
  v.data.bo.size = bytes.size();
  int rc = put_(pmix::kScopeGlobal, key.c_str(), &v);
  if (rc != pmix::kSuccess) return Error{Why(("PMIx_Put(" + key + ")").c_str(), rc)};
  return Ok{};
}

Status PmixClient::Exchange() {
  int rc = commit_();
  if (rc != pmix::kSuccess) return Error{Why("PMIx_Commit", rc)};
  const pmix::Proc all = ProcOf(std::nullopt);
  // No PMIX_TIMEOUT: with it, PRRTE (Open MPI 5.0.7) more often never
  // completed the command's own first fence afterwards (its MPI_Init hung
  // in 4 of 24 loaded 2-node runs, against 1 of 24 without). A rank that
  // never comes is the launcher's to end.
  pmix::Info info;
  SetKey(info, pmix::kCollectData);
  info.value.type = pmix::kBool;
  info.value.data.flag = true;
  rc = fence_(&all, 1, &info, 1);
  if (rc != pmix::kSuccess) return Error{Why("PMIx_Fence", rc)};
  return Ok{};
}

}  // namespace aml
