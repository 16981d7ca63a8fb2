// A PMIx client (docs/world.md, "How the world is resolved"): asks the launcher's
// own runtime (Open MPI 4 and 5, prterun, srun --mpi=pmix) what its variables
// no longer say, without MPI_Init. libpmix is loaded at run time
// (shim/base/dynlib.h: AML_SHIM_LIBPMIX, else libpmix.so.2). PMIx_Init on
// Open, PMIx_Finalize on destruction: the command started after it connects
// as the same process, and its own MPI_Init finds no data of aml-shim's but
// its keys (all named "aml-shim.*").
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "shim/base/dynlib.h"
#include "shim/base/env_snapshot.h"
#include "shim/base/result.h"
#include "shim/pmix/pmix_abi.h"

namespace aml {

// A PMIx server is offered to this process: PMIX_NAMESPACE, PMIX_RANK and
// one of PMIX_SERVER_URI{,2,21,3,4,41}.
bool PmixServerOffered(const EnvSnapshot& env);

// libpmix.so.2 (PMIx 2 to 5), then Debian's private copy.
LibrarySpec PmixLibrarySpec();

// The URI variable libpmix connects with (the newest offered) and its
// value: "PMIX_SERVER_URI41='pmix-server.4711;tcp4://127.0.0.1:1234'".
std::string PmixServerNamed(const EnvSnapshot& env);

class PmixClient {
 public:
  // PMIx_Init's deadline: a server that accepts and never answers (a stale
  // URI whose port another service took) would block it for ever.
  static constexpr double kInitS = 10;
  // Loads libpmix and connects to the local server, waiting at most
  // `init_s`; the error names the server that did not answer.
  // `reached_server`, if given, says whether the library was loaded and
  // PMIx_Init called (then an error is the server's).
  static Result<std::unique_ptr<PmixClient>> Open(const EnvSnapshot& env,
                                                  double init_s = kInitS,
                                                  bool* reached_server = nullptr);
  // PMIx_Finalize's deadline.
  static constexpr double kFinalizeS = 10;
  // PMIx_Finalize (at most kFinalizeS). aml-shim holds its client until the
  // ranks' commands have ended: their own PMIx_Init connects as the same
  // rank beside it. PMIx 5.0.7's server mishandles a rank that finalizes and
  // initialises again (openpmix#3931, #4113): a command's MPI_Init after
  // aml-shim's PMIx_Finalize hung in 7 of 80 loaded 2-node runs.
  ~PmixClient();
  PmixClient(const PmixClient&) = delete;
  PmixClient& operator=(const PmixClient&) = delete;

  int rank() const { return static_cast<int>(self_.rank); }
  std::string nspace() const { return self_.nspace; }
  const std::string& library() const { return library_; }

  // Job-level values (wildcard rank) when rank is nullopt, else the rank's.
  Result<uint32_t> GetUint(std::optional<int> rank, const char* key) const;
  Result<std::string> GetString(std::optional<int> rank, const char* key) const;
  // A value another process Put (after a Fence that collected it).
  Result<std::string> GetBytes(int rank, const std::string& key) const;

  // Publishes `bytes` under `key` for every process of the job.
  Status Put(const std::string& key, const std::string& bytes);
  // Commit, then a barrier of the whole job that collects what each Put.
  // It waits as long as it takes: a rank that never comes is the
  // launcher's to end.
  Status Exchange();

 private:
  PmixClient() = default;
  // This job's process `rank`, or every process (the wildcard) for nullopt.
  pmix::Proc ProcOf(std::optional<int> rank) const;
  Result<pmix::Value*> Get(const pmix::Proc& proc, const char* key) const;
  std::string Why(const char* call, int status) const;

  pmix::Proc self_{};
  std::string library_;
  bool initialised_ = false;
  pmix::InitFn init_ = nullptr;
  pmix::FinalizeFn finalize_ = nullptr;
  pmix::GetFn get_ = nullptr;
  pmix::PutFn put_ = nullptr;
  pmix::CommitFn commit_ = nullptr;
  pmix::FenceFn fence_ = nullptr;
  pmix::ErrorStringFn error_string_ = nullptr;
};

}  // namespace aml
