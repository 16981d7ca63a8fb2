// The flight recorder's variables for each rank (docs/control-plane.md,
// "Naming the culprit"), the agent that serves a dump where torch has no
// reader, and where each rank's pipe and dump are. Everything lives in the
// shim's private directory (0700, launch/error_file.h): the agent in
// python/, each attempt's pipes and dumps in fr-<attempt>/ (0700 too,
// made without following a link). A variable the user set stands: its
// value is kept and `env --explain` says what aml-shim would have set.
#pragma once

#include <optional>
#include <string>

#include "shim/base/env_snapshot.h"
#include "shim/base/env_var.h"
#include "shim/base/result.h"

namespace aml {

constexpr int kFlightEntries = 2000;  // collectives each rank's recorder keeps

std::string FlightAttemptDir(const std::string& private_dir, int attempt);
std::string FlightAgentDir(const std::string& private_dir);

// The variables of attempt `attempt` (0: the first) over the user's `env`:
// the recorder's buffer (TORCH_FR_BUFFER_SIZE and torch < 2.6's
// TORCH_NCCL_TRACE_BUFFER_SIZE), the pipe stem, the dump prefix (and
// torch < 2.6's name for it), and PYTHONPATH with the agent first.
void AddFlightVars(const EnvSnapshot& env, const std::string& private_dir, int attempt,
                   ContractBuilder* b);

// PYTHONPATH with the agent's directory first (and `env`'s after it).
std::string AgentPythonPath(const EnvSnapshot& env, const std::string& private_dir);

// --warm-restart (docs/control-plane.md, "Warm restarts"): where rank R's
// agent writes the installed modules it imported (this + R), which its
// next standby imports.
std::string WarmLearnPrefix(const std::string& private_dir);
// That prefix as AML_SHIM_LEARN_MODULES, and (`with_agent`: the flight
// recorder's variables do not put it there already) PYTHONPATH with the
// agent first.
void AddWarmLearnVars(const EnvSnapshot& env, const std::string& private_dir, bool with_agent,
                      ContractBuilder* b);

// Writes the agent as the module sitecustomize in python/ of `private_dir`
// (which must be the shim's own, 0700). The error names the path.
Status MakeFlightAgent(const std::string& private_dir);
// Makes fr-<attempt>/ in `private_dir`, 0700; one already there (a link,
// or a file) is refused. The error names the path.
Status MakeFlightAttemptDir(const std::string& private_dir, int attempt);

// Removes fr-<attempt>/ and what is in it (never through a link).
void RemoveFlightAttemptDir(const std::string& private_dir, int attempt);

// What --log-dir keeps of rank `rank`'s record in attempt `attempt` (1: the
// first): "fr-attempt1-rank-3", so that `torchfrtrace DIR -p
// fr-attempt1-rank-` reads one attempt's.
std::string FlightRecordName(int attempt, int rank);
std::string FlightRecordPrefix(int attempt);

// A rank's files, from its environment: the pipe torch (or the agent)
// reads, the dump it writes, the line the agent writes when it cannot, and
// the mark the agent keeps while a dump with stack traces is still to come
// after the one without them it wrote first.
// `light`: where aml-shim's agent writes a look's record (asked for with
// no stack traces): never `dump`, so that a hang's or a failure's ask,
// which needs them, cannot take a look's record the agent wrote late.
// `exit`: the record the agent writes as an exception ends the rank (a
// Gloo rank whose peer died), unasked: it is this attempt's (the files are
// in the attempt's own directory), whenever it was written.
struct FlightFiles {
  std::string pipe, dump, why, more, light, exit;
};
// What the agent writes as a rank's `why` until its process group is up
// (fr_agent.py says the same).
constexpr char kStillStartingWhy[] = "still starting: no process group yet";
// None when the environment names no pipe (the recorder is off).
std::optional<FlightFiles> FlightFilesOf(const EnvSnapshot& base, const EnvSets& sets, int rank);

}  // namespace aml
