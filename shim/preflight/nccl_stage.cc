#include "shim/preflight/nccl_stage.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/child.h"
#include "launch/wait_status.h"
#include "shim/preflight/nccl_worker.h"

namespace aml {
namespace {

constexpr size_t kMaxFrame = 1 << 20;
// The setup frame to a worker that has just started.
constexpr std::chrono::seconds kSetupTimeout{10};
// How long an exited worker is given to be reaped before it is killed.
constexpr int kReapPolls = 50;
constexpr std::chrono::milliseconds kReapPoll{20};

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

NcclStage::NcclStage(int node, const WorkerSetup& setup, const EnvSnapshot& worker_env,
                     const std::string& exe_arg)
    : node_(node), gpus_(static_cast<int>(setup.slots.size())) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) {
    start_error_ = std::string("socketpair: ") + std::strerror(errno);
    return;
  }
  Fd mine(sv[0]), theirs(sv[1]);
  const std::string exe = exe_arg.empty() ? SelfExe() : exe_arg;
  if (exe.empty()) {
    start_error_ = "cannot find aml-shim's own executable (/proc/self/exe) to start the NCCL worker";
    return;
  }
  SpawnSpec spec;
  spec.search_path = false;
  // Its own group: a ^C meant for the job does not reach a worker the shim
  // is about to kill anyway, and the worker cannot signal the job.
  spec.own_process_group = true;
  spec.stdout_to_stderr = true;  // NCCL_DEBUG writes to stdout: keep it for the job
  spec.pass_fd = theirs.get();
  spec.pass_as = kNcclWorkerFd;
  int unused_code = 0;
  auto spawned =
      Spawn({exe, kNcclWorkerArg, std::to_string(getpid())}, worker_env, spec, &unused_code);
  if (!spawned.ok()) {
    start_error_ = "cannot start the NCCL worker: " + spawned.error().message;
    return;
  }
  pid_ = spawned->pid;
  fd_ = std::move(mine);
  auto sent = SendFrame(fd_.get(), EncodeSetup(setup), Clock::now() + kSetupTimeout);
  if (!sent.ok()) start_error_ = Lost(sent.error().message, false);
}

NcclStage::~NcclStage() { Kill(); }

void NcclStage::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string NcclStage::Lost(const std::string& io_error, bool timed_out) {
  if (timed_out) {
    Kill();
    return "the NCCL worker timed out during " + phase_ + " (--preflight-timeout)";
  }
  // The worker closed its end: give it a moment to be reaped, then say how
  // it ended.
  std::string how = "stopped answering (" + io_error + ")";
  for (int i = 0; i < kReapPolls && pid_ > 0; ++i) {
    int status;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      how = HowItEnded(status);
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(kReapPoll);
  }
  Kill();
  return "the NCCL worker " + how + " during " + phase_;
}

GpuHello NcclStage::Ready(Deadline deadline) {
  GpuHello h;
  h.node = node_;
  h.gpus = gpus_;
  if (!start_error_.empty()) {
    h.ready.error = start_error_;
    return h;
  }
  auto frame = RecvFrame(fd_.get(), kMaxFrame, deadline);
  if (!frame.ok()) {
    h.ready.error = Lost(frame.error().message, Clock::now() >= deadline);
    return h;
  }
  auto ready = DecodeReady(*frame);
  if (!ready.ok()) {
    h.ready.error = "the NCCL worker answered nonsense: " + ready.error().message;
    Kill();
    return h;
  }
  h.ready = std::move(*ready);
  phase_ = "its start";
  return h;
}

WorkerResult NcclStage::Run(const WorkerGo& go, Deadline deadline, int interrupt_fd,
                            bool* interrupted) {
  *interrupted = false;
  WorkerResult r;
  auto sent = SendFrame(fd_.get(), EncodeGo(go), deadline);
  if (!sent.ok()) {
    r.timed_out = Clock::now() >= deadline;
    r.error = Lost(sent.error().message, r.timed_out);
    return r;
  }
  for (;;) {
    pollfd p[2] = {{fd_.get(), POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
    int ready = poll(p, interrupt_fd >= 0 ? 2 : 1, PollTimeoutMs(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (interrupt_fd >= 0 && p[1].revents != 0 && p[0].revents == 0) {
      *interrupted = true;
      Kill();
      r.error = "stopped by rank 0 during " + phase_;
      return r;
    }
    auto frame = RecvFrame(fd_.get(), kMaxFrame, deadline);
    if (!frame.ok()) {
      r.timed_out = Clock::now() >= deadline;
      r.error = Lost(frame.error().message, r.timed_out);
      return r;
    }
    std::string phase = PhaseOf(*frame);
    if (!phase.empty()) {
      phase_ = phase;
      continue;
    }
    auto result = DecodeResult(*frame);
    if (!result.ok()) {
      r.error = "the NCCL worker answered nonsense: " + result.error().message;
      Kill();
      return r;
    }
    // The worker stays up until the stage is destroyed: by then every rank
    // has finished, so ending it cannot cut a peer's transfer short.
    return *result;
  }
}

}  // namespace aml
