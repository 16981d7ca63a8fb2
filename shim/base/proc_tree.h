// This process's ancestors, from /proc: for a launcher whose processes on a
// node share a parent but no job id in the environment (MPICH's Hydra: every
// local rank is a child of one hydra_pmi_proxy).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace aml {

// The command name and parent of `pid`, from /proc/PID/stat (the name may
// hold spaces and parentheses: it is everything between the first '(' and
// the last ')'); false when the process is gone.
bool ReadProcStat(pid_t pid, std::string* comm, pid_t* parent);

// The CPU time `pid` has used (user and system, its own and that of its
// children it reaped), in seconds, from the same file; none when it is gone.
std::optional<double> ProcCpuSeconds(pid_t pid);

// The nearest ancestor whose command name (/proc/PID/comm) is `comm`.
std::optional<pid_t> AncestorNamed(const std::string& comm);

}  // namespace aml
