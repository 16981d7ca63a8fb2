// A library call that may never return (PMIx_Init against a server that
// accepts and never answers; PMIx_Finalize against a wedged one), run on a
// thread of its own and waited for at most a deadline.
#pragma once

#include <functional>

namespace aml {

// Runs `call` on a new thread with every signal blocked (so that neither it
// nor a thread it starts, such as a library's progress thread, takes a
// signal meant for the supervisor's signalfd) and waits at most `seconds`.
// True when it returned in time. A call that did not is left running,
// detached: whatever it touches must outlive this process's use of it
// (capture by value or shared_ptr), and it ends with the exec or the exit.
// The wait is an eventfd and poll, not a condition variable, whose timed
// wait needs GLIBC_2.30 (the release needs 2.17).
bool CallWithin(double seconds, std::function<void()> call);

}  // namespace aml
