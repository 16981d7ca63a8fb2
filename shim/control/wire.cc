#include "shim/control/wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "shim/base/json.h"

namespace aml {

Msg& Msg::Set(const std::string& key, long long value) {
  json_[key] = std::to_string(value);
  return *this;
}

Msg& Msg::Set(const std::string& key, const std::string& value) {
  json_[key] = JsonQuote(value);
  return *this;
}

// Every digit a double holds: a failure's wall time (1.8e9 s) must keep its
// milliseconds for rank 0 to tell which came first.
Msg& Msg::SetNumber(const std::string& key, double value) {
  char buf[40];
  if (std::isfinite(value)) std::snprintf(buf, sizeof buf, "%.17g", value);
  else std::snprintf(buf, sizeof buf, "null");
  json_[key] = buf;
  return *this;
}

Msg& Msg::SetRaw(const std::string& key, const std::string& json) {
  json_[key] = json;
  return *this;
}

std::string Msg::Encode() const {
  std::string out = "{\"t\":" + JsonQuote(type_);
  for (const auto& [k, v] : json_) out += "," + JsonQuote(k) + ":" + v;
  return out + "}";
}

Result<Msg> Msg::Decode(const std::string& frame) {
  auto v = ParseJson(frame);
  if (!v.ok()) return v.error();
  if (v->kind != JsonValue::Kind::kObject) return Error{"not a JSON object"};
  const JsonValue* t = v->Find("t");
  if (!t || t->kind != JsonValue::Kind::kString || t->text.empty())
    return Error{"no message type"};
  Msg m(t->text);
  m.parsed_ = std::move(*v);
  return m;
}

long long Msg::Int(const std::string& key, long long fallback) const {
  const JsonValue* v = parsed_.Find(key);
  if (!v || v->kind != JsonValue::Kind::kNumber) return fallback;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v->text.c_str(), &end, 10);
  if (errno || *end != '\0') return fallback;
  return n;
}

double Msg::Number(const std::string& key, double fallback) const {
  const JsonValue* v = parsed_.Find(key);
  if (!v || v->kind != JsonValue::Kind::kNumber) return fallback;
  char* end = nullptr;
  double d = std::strtod(v->text.c_str(), &end);
  return *end == '\0' ? d : fallback;
}

std::string Msg::Str(const std::string& key) const {
  const JsonValue* v = parsed_.Find(key);
  return v && v->kind == JsonValue::Kind::kString ? v->text : "";
}

const JsonValue* Msg::Raw(const std::string& key) const { return parsed_.Find(key); }

FrameLink::FrameLink(Fd fd, size_t max_frame, size_t max_queue)
    : fd_(std::move(fd)), max_frame_(max_frame), max_queue_(max_queue) {}

void FrameLink::Read(std::vector<std::string>* frames) {
  if (read_ended_) return;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      read_ended_ = true;
      // (The peer's close read after a write to it failed: "closed".)
      if (n == 0) why_ = "closed";
      else if (why_.empty()) why_ = std::strerror(errno);
      break;
    }
    in_.append(buf, static_cast<size_t>(n));
    received_ += static_cast<size_t>(n);
    // Whole frames out; a length over the cap breaks the link at once.
    while (in_.size() >= 4) {
      const auto* p = reinterpret_cast<const unsigned char*>(in_.data());
      const size_t len = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
      if (len > max_frame_) {
        read_ended_ = true;
        why_ = "sent a frame of " + std::to_string(len) + " bytes (cap " +
               std::to_string(max_frame_) + ")";
        return;
      }
      if (in_.size() < 4 + len) break;
      frames->push_back(in_.substr(4, len));
      in_.erase(0, 4 + len);
    }
  }
}

void FrameLink::Send(const std::string& payload) {
  if (broken()) return;
  if (out_.size() - sent_ + payload.size() > max_queue_) {
    why_ = "does not take what is sent to it (over " + std::to_string(max_queue_ >> 20) +
           " MiB queued)";
    return;
  }
  if (sent_ > 0 && sent_ == out_.size()) {
    out_.clear();
    sent_ = 0;
  }
  const auto len = static_cast<uint32_t>(payload.size());
  const char head[4] = {static_cast<char>(len >> 24), static_cast<char>(len >> 16),
                        static_cast<char>(len >> 8), static_cast<char>(len)};
  out_.append(head, 4);
  out_ += payload;
  Flush();
}

void FrameLink::Flush() {
  while (!broken() && sent_ < out_.size()) {
    ssize_t n = send(fd_.get(), out_.data() + sent_, out_.size() - sent_,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {
      why_ = std::strerror(errno);
      return;
    }
    sent_ += static_cast<size_t>(n);
  }
  if (sent_ == out_.size()) {
    out_.clear();
    sent_ = 0;
  }
}

}  // namespace aml
