// The variables the command gets (DESIGN.md §5), each with its reason.
#pragma once

#include <string>
#include <vector>

#include "shim/env_snapshot.h"
#include "shim/options.h"
#include "shim/world.h"

namespace aml {

struct EnvVar {
  std::string name;
  std::string value;
  std::string why;
  bool user_kept = false;  // the user's own value was kept (value is theirs)
};

// Collects assignments: Force() always writes (the world), Default() writes
// only when the user left the variable unset.
class ContractBuilder {
 public:
  explicit ContractBuilder(const EnvSnapshot& env) : env_(env) {}
  void Force(const std::string& name, const std::string& value,
             const std::string& why);
  void Default(const std::string& name, const std::string& value,
               const std::string& why);
  const std::vector<EnvVar>& vars() const { return vars_; }

 private:
  const EnvSnapshot& env_;
  std::vector<EnvVar> vars_;
};

// Which child of how many this shim starts (1 of 1 in exec mode).
struct ChildSlot {
  int index = 0;
  int nproc = 1;
  bool output_piped = false;  // aml-shim reads the child's output
};

// The world of child `slot` of this shim:
// RANK = s*p + i, WORLD_SIZE = S*p, LOCAL_RANK = l*p + i, LOCAL_WORLD_SIZE = L*p.
std::vector<EnvVar> BuildContract(const World& world, const EnvSnapshot& env,
                                  const ChildSlot& slot);

// The command's argv, with --local_rank=N appended under --local-rank-arg.
std::vector<std::string> BuildArgv(const std::vector<std::string>& command,
                                   const Options& options,
                                   const std::vector<EnvVar>& vars);

// `env` with the assignments applied (user-kept ones change nothing).
EnvSnapshot ApplyContract(const EnvSnapshot& env,
                          const std::vector<EnvVar>& vars);

// The value assigned to `name`, or "" when absent.
std::string ValueOf(const std::vector<EnvVar>& vars, const std::string& name);

}  // namespace aml
