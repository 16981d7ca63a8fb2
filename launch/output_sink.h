// Where the supervisor writes its stdout and stderr: never a blocking write,
// so a reader that stalls (`| sleep 60`, a frozen terminal, a full mpirun
// forwarding pipe) cannot make the shim deaf to signals, failures and its
// grace timer. Bytes queue up to a cap; past it the supervisor stops reading
// the children's pipes, so they block on their writes as they would on the
// reader's own pipe (nothing is lost while the job runs). A reader that has
// gone (EPIPE) marks the sink broken: the supervisor ends the job as a
// pipeline would. At the end, what the reader does not take within a bounded
// wait is dropped and counted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace aml {

class OutputSink {
 public:
  // `fd` stays open and blocking for everyone else sharing it: pipes and
  // terminals are reopened through /proc/self/fd with O_NONBLOCK, sockets get
  // MSG_DONTWAIT, regular files and /dev/null never block.
  OutputSink(int fd, size_t cap);
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  void Write(std::string_view data);
  // Writes as much of the queue as the descriptor takes now.
  void Flush();
  // Drops the queue (counted in dropped()).
  void Drop();

  int poll_fd() const { return fd_; }
  bool pending() const { return !broken_ && queue_.size() > head_; }
  bool full() const { return queue_.size() - head_ >= cap_; }
  // No more output can go out; `error()` says why (EPIPE: the reader left).
  bool broken() const { return broken_; }
  int error() const { return error_; }
  size_t dropped() const { return dropped_; }

 private:
  size_t WriteSome(const char* p, size_t n);  // bytes written now
  int fd_;
  int own_fd_ = -1;  // the non-blocking reopen, when there is one
  enum class Mode { kBlockingOk, kNonBlocking, kSocket, kSmallWrites } mode_;
  size_t cap_;
  std::string queue_;
  size_t head_ = 0;  // bytes of queue_ already written
  bool broken_ = false;
  int error_ = 0;
  size_t dropped_ = 0;
};

}  // namespace aml
