#include "shim/base/bounded_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

namespace aml {

bool CallWithin(double seconds, std::function<void()> call) {
  // The thread writes its own descriptor: this side may have closed its
  // copy by the time a late call returns.
  const int ended = eventfd(0, EFD_CLOEXEC);
  const int told = ended >= 0 ? fcntl(ended, F_DUPFD_CLOEXEC, 0) : -1;
  if (told < 0) {
    if (ended >= 0) close(ended);
    call();  // no descriptors left: the call runs here, unbounded
    return true;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);  // the new thread inherits it
  std::thread([call = std::move(call), done, told] {
    call();
    done->store(true, std::memory_order_release);
    const uint64_t one = 1;
    (void)!write(told, &one, sizeof one);
    close(told);
  }).detach();
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  pollfd p{ended, POLLIN, 0};
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (done->load(std::memory_order_acquire) || left.count() <= 0) break;
    poll(&p, 1, static_cast<int>(left.count()) + 1);
  }
  close(ended);
  return done->load(std::memory_order_acquire);
}

}  // namespace aml
