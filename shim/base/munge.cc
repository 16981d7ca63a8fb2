#include "shim/base/munge.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace aml {
namespace {

LibrarySpec MungeLibrarySpec() {
  return LibrarySpec{"libmunge (the MUNGE client library)",
                     "AML_SHIM_LIBMUNGE",
                     {"libmunge.so.2"},
                     "the libmunge2 package; munged must run on every node",
                     false};
}

// munge.h's MUNGE_OPT_SOCKET (the same in every libmunge.so.2 since 0.5).
constexpr int kOptSocket = 8;

// Whether munged listens at `path`, asked with one connect: libmunge itself
// retries a refused or missing socket for about 2.5 s before it says so.
Status Listening(const std::string& path) {
  sockaddr_un a{};
  if (path.empty() || path.size() >= sizeof(a.sun_path))
    return Error{"its socket path '" + path + "' cannot be used"};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Error{std::string("socket(AF_UNIX): ") + std::strerror(errno)};
  const int rc = connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof(a));
  const int e = errno;
  close(s);
  if (rc != 0) return Error{"munged does not answer at " + path + ": " + std::strerror(e)};
  return Ok{};
}

}  // namespace

Result<std::shared_ptr<Munge>> Munge::Open(const EnvSnapshot& env) {
  auto lib = OpenLibrary(MungeLibrarySpec(), env);
  if (!lib.ok()) return lib.error();
  std::shared_ptr<Munge> m(new Munge());
  m->library_ = lib->file();
  void* (*ctx_create)() = nullptr;
  int (*ctx_get)(void*, int, ...) = nullptr;
  void (*ctx_destroy)(void*) = nullptr;
  auto bound = lib->Bind({Sym("munge_encode", &m->encode_), Sym("munge_decode", &m->decode_),
                          Sym("munge_strerror", &m->strerror_),
                          Sym("munge_ctx_create", &ctx_create), Sym("munge_ctx_get", &ctx_get),
                          Sym("munge_ctx_destroy", &ctx_destroy)});
  if (!bound.ok()) return bound.error();
  // The socket libmunge would use (its build's default), asked once.
  if (void* ctx = ctx_create()) {
    char* path = nullptr;
    const int e = ctx_get(ctx, kOptSocket, &path);
    const std::string socket_path = (e == 0 && path) ? path : "";
    ctx_destroy(ctx);
    if (!socket_path.empty()) {
      auto up = Listening(socket_path);
      if (!up.ok()) return up.error();
    }
  }
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
