// What a waitpid status means, in the words every report uses.
#pragma once

#include <string>

namespace aml {

// The exit code a shell would report: the status, or 128+N for signal N.
int ExitCodeFor(int wait_status);
// "exit status 7" or "signal 9 (SIGKILL)" (", core dumped" when it did).
std::string DescribeStatus(int wait_status);
// As a clause: "exited with status 7", "was killed by signal 6 (SIGABRT)".
std::string HowItEnded(int wait_status);
// "SIGKILL" for 9; "signal 64" when unnamed.
std::string SignalName(int sig);

}  // namespace aml
