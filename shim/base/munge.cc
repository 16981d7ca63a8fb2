#include "shim/base/munge.h"

#include <cstdlib>

namespace aml {
namespace {

LibrarySpec MungeLibrarySpec() {
  return LibrarySpec{"libmunge (the MUNGE client library)",
                     "AML_SHIM_LIBMUNGE",
                     {"libmunge.so.2"},
                     "the libmunge2 package; munged must run on every node",
                     false};
}

}  // namespace

Result<std::shared_ptr<Munge>> Munge::Open(const EnvSnapshot& env) {
  auto lib = OpenLibrary(MungeLibrarySpec(), env);
  if (!lib.ok()) return lib.error();
  std::shared_ptr<Munge> m(new Munge());
  m->library_ = lib->file();
  auto bound = lib->Bind({Sym("munge_encode", &m->encode_), Sym("munge_decode", &m->decode_),
                          Sym("munge_strerror", &m->strerror_)});
  if (!bound.ok()) return bound.error();
  // A credential made now says whether munged answers.
  auto probe = m->Encode("aml-shim-probe");
  if (!probe.ok()) return probe.error();
  return m;
}

std::string Munge::Why(const char* call, int e) const {
  const char* text = strerror_ ? strerror_(e) : nullptr;
  return std::string(call) + " in " + library_ + ": " +
         (text ? text : "error " + std::to_string(e));
}

Result<std::string> Munge::Encode(const std::string& payload) const {
  char* cred = nullptr;
  const int e = encode_(&cred, nullptr, payload.data(), static_cast<int>(payload.size()));
  if (e != 0 || !cred) {
    std::free(cred);
    return Error{Why("munge_encode", e)};
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

Result<MungeCredential> Munge::Decode(const std::string& credential) const {
  void* buf = nullptr;
  int len = 0;
  MungeCredential c;
  const int e = decode_(credential.c_str(), nullptr, &buf, &len, &c.uid, &c.gid);
  if (buf && len > 0) c.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
  std::free(buf);
  if (e != 0) return Error{Why("munge_decode", e)};
  return c;
}

}  // namespace aml
