#include "launch/output_sink.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace aml {

OutputSink::OutputSink(int fd, size_t cap) : fd_(fd), mode_(Mode::kSmallWrites), cap_(cap) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    mode_ = Mode::kBlockingOk;  // writes will fail with EBADF: nothing blocks
    return;
  }
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    mode_ = Mode::kBlockingOk;
  } else if (S_ISSOCK(st.st_mode)) {
    mode_ = Mode::kSocket;
  } else if ((fcntl(fd, F_GETFL) & O_NONBLOCK) != 0) {
    mode_ = Mode::kNonBlocking;
  } else {
    // A new open file description of the same pipe or terminal: O_NONBLOCK
    // on it does not change the caller's (or the children's) descriptor.
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    int own = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (own >= 0) {
      struct stat again {};
      if (fstat(own, &again) == 0 && again.st_ino == st.st_ino && again.st_dev == st.st_dev) {
        own_fd_ = fd_ = own;
        mode_ = Mode::kNonBlocking;
      } else {
        close(own);
      }
    }
    // Else writes of at most PIPE_BUF bytes after POLLOUT, which a pipe
    // takes whole without blocking.
  }
}

OutputSink::~OutputSink() {
  if (own_fd_ >= 0) close(own_fd_);
}

size_t OutputSink::WriteSome(const char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w;
    switch (mode_) {
      case Mode::kSocket:
        w = send(fd_, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case Mode::kSmallWrites: {
        pollfd pfd{fd_, POLLOUT, 0};
        if (poll(&pfd, 1, 0) != 1) return done;
        if (pfd.revents & (POLLERR | POLLHUP)) {
          broken_ = true;
          error_ = EPIPE;
          return done;
        }
        w = write(fd_, p + done, std::min<size_t>(n - done, PIPE_BUF));
        break;
      }
      default:
        w = write(fd_, p + done, n - done);
    }
    if (w > 0) {
      done += static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return done;
    } else {
      broken_ = true;  // EPIPE, a hung-up terminal, a full disk
      error_ = w < 0 ? errno : EIO;
      return done;
    }
  }
  return done;
}

void OutputSink::Write(std::string_view data) {
  if (broken_) {
    dropped_ += data.size();
    return;
  }
  if (queue_.size() == head_) {
    queue_.clear();
    head_ = 0;
    size_t done = WriteSome(data.data(), data.size());
    data.remove_prefix(done);
    if (broken_) {
      dropped_ += data.size();
      return;
    }
  }
  queue_.append(data);
}

void OutputSink::Flush() {
  if (broken_ || queue_.size() == head_) return;
  head_ += WriteSome(queue_.data() + head_, queue_.size() - head_);
  if (broken_) {
    Drop();
  } else if (head_ == queue_.size()) {
    queue_.clear();
    head_ = 0;
  } else if (head_ > cap_) {
    queue_.erase(0, head_);
    head_ = 0;
  }
}

void OutputSink::Drop() {
  dropped_ += queue_.size() - head_;
  queue_.clear();
  head_ = 0;
}

}  // namespace aml
