// MUNGE (docs/control-plane.md, "Control plane"): the credential service
// every Slurm cluster runs (munged on each node, one key cluster-wide). A
// credential encodes a payload with the user who made it, expires (5 min by
// default) and is refused when decoded twice (munged's replay cache). Where a
// job has no secret of its own, the doors prove membership with it
// (shim/base/proof.h): the same user on a node of the same cluster. libmunge
// is loaded at run time (shim/base/dynlib.h: AML_SHIM_LIBMUNGE, else
// libmunge.so.2); each call is a round trip to the local munged.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "shim/base/dynlib.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"

namespace aml {

struct MungeCredential {
  std::string payload;
  uid_t uid = 0;
  gid_t gid = 0;
};

class Munge {
 public:
  // libmunge and a munged that answers (one credential made and decoded);
  // the error says why not.
  static Result<std::shared_ptr<Munge>> Open(const EnvSnapshot& env);

  Result<std::string> Encode(const std::string& payload) const;
  // A credential of this cluster, never decoded before.
  Result<MungeCredential> Decode(const std::string& credential) const;

 private:
  Munge() = default;
  using EncodeFn = int (*)(char** cred, void* ctx, const void* buf, int len);
  using DecodeFn = int (*)(const char* cred, void* ctx, void** buf, int* len, uid_t* uid,
                           gid_t* gid);
  using StrerrorFn = const char* (*)(int e);
  std::string Why(const char* call, int e) const;

  std::string library_;
  EncodeFn encode_ = nullptr;
  DecodeFn decode_ = nullptr;
  StrerrorFn strerror_ = nullptr;
};

}  // namespace aml
