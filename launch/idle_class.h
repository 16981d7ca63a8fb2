// --warm-restart's standbys wait in the idle scheduling class (CPU:
// SCHED_IDLE; I/O: IOPRIO_CLASS_IDLE), so that a standby importing its
// modules never slows a rank: it runs only on what the node's ranks leave
// idle. At its order every thread of it goes back to the normal classes
// (SCHED_OTHER at its own nice value; the I/O class this shim has), before
// it runs a line of the script.
//
// Leaving the idle class takes CAP_SYS_NICE or an RLIMIT_NICE that allows
// the process's nice value (sched(7)): a shim that could not bring its
// standby back never puts it there (MayLeaveIdleClass), and its standbys
// start later instead (launch/warm_slots.h).
#pragma once

#include <sys/types.h>

#include <string>

#include "shim/base/result.h"

namespace aml {

// Puts the calling thread (a child between vfork and exec: system calls
// only) in the idle CPU and I/O classes; what exec keeps. Best effort: a
// kernel that refuses leaves it as it was.
void EnterIdleClassInChild();

// Whether this process may bring a process of its own back from the idle
// class; "" or why not (the capability and limit looked at, named).
std::string WhyNotLeaveIdleClass();

// Every thread of `pid` in the idle CPU class goes back to SCHED_OTHER and
// to this process's I/O class, again until none is left (a thread it starts
// meanwhile inherits the class of the one that started it).
Status LeaveIdleClass(pid_t pid);

// Whether `tid` is in the idle CPU class (false when it cannot be read).
bool InIdleClass(pid_t tid);

// Why process `pid` is ending ("": it is not): killed (SIGKILL pending) or
// exited, not reaped yet. A process in the idle class that was SIGKILLed
// ends only when the CPU is idle: it can be alive long after its kill.
std::string WhyEnding(pid_t pid);

}  // namespace aml
