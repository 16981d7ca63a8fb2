// aml-shim's own exit codes, as env(1) and tini use them. Anything else is
// the command's exit status, or 128+N when it died of signal N.
#pragma once

namespace aml {

constexpr int kExitShimFailure = 125;    // aml-shim failed; the command never ran
constexpr int kExitNotExecutable = 126;  // the command was found but cannot run
constexpr int kExitNotFound = 127;       // the command was not found

}  // namespace aml
