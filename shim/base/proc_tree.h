// This process's ancestors, from /proc: for a launcher whose processes on a
// node share a parent but no job id in the environment (MPICH's Hydra: every
// local rank is a child of one hydra_pmi_proxy).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace aml {

// The nearest ancestor whose command name (/proc/PID/comm) is `comm`.
std::optional<pid_t> AncestorNamed(const std::string& comm);

}  // namespace aml
