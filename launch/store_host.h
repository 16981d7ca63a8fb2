// --warm-restart: the store host (docs/control-plane.md, "Warm restarts"),
// as a process. On the node that runs rank 0, one interpreter of the job's
// own (its flags, its environment) runs store_host.py for the whole job:
// it imports torch.distributed at once, in the idle scheduling class, and
// before each restart opens that attempt's TCPStore on its MASTER_PORT, so
// that every rank of the attempt starts as its client
// (TORCHELASTIC_USE_AGENT_STORE=True) and none reaches the port before a
// store listens there (a refused client backs off: 1 s in torch 1.13). Where
// it cannot (still importing, gone, an error), rank 0 hosts the attempt's
// store as without it. Like a standby, it is in a process group of its own,
// named to the keeper, and ended with the shim.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/warm_command.h"
#include "shim/base/env_snapshot.h"

namespace aml {

class StoreHost {
 public:
  static constexpr double kAnswerS = 2;  // a store opened, at most

  ~StoreHost();
  // Starts `command`'s interpreter on store_host.py (written into `dir`),
  // in `env`, in the idle class when `idle`; its stores are told `addr`
  // (MASTER_ADDR, this node's) and `world` (WORLD_SIZE). "" (its pid in
  // `*pid`) or why not.
  std::string Start(const PythonCommand& command, const EnvSnapshot& env, const std::string& dir,
                    bool idle, std::string addr, int world, pid_t* pid);
  // The next attempt's store opened on `port`: true once it listens. False
  // with why when it cannot: still importing (it may next time), or it
  // failed (it is ended: none after).
  bool Host(int port, std::string* why);
  // A reaped pid: true when it was the host's; `*why` when it ended by
  // itself.
  bool Reaped(pid_t pid, int status, std::string* why);
  void End();                   // its group killed
  std::vector<pid_t> pids() const;  // alive, or killed and not reaped yet
  bool live() const { return pid_ > 0; }

 private:
  // Reads what it said, waiting up to `wait_s` for a whole line; the line
  // ("" when none came).
  std::string Line(double wait_s);

  pid_t pid_ = -1;
  pid_t killed_ = -1;
  int fd_ = -1;
  bool ready_ = false, idle_ = false;
  std::string addr_, script_, pending_;
  int world_ = 0;
};

}  // namespace aml
