// The control plane's wire (docs/control-plane.md, "Control plane"): each message is one
// frame (4-byte big-endian length, then a JSON object whose "t" names it),
// read and written without ever blocking. A link that sends a frame over its
// cap, or queues more than its peer takes, is broken: the plane treats it as
// a lost peer, never as a reason to wait.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shim/base/json_read.h"
#include "shim/net/tcp.h"

namespace aml {

// A message: its type and its fields (numbers and strings).
class Msg {
 public:
  explicit Msg(std::string type) : type_(std::move(type)) {}
  Msg& Set(const std::string& key, long long value);
  Msg& Set(const std::string& key, const std::string& value);
  Msg& SetNumber(const std::string& key, double value);
  const std::string& type() const { return type_; }
  std::string Encode() const;
  // The JSON object's "t" and fields; errors say what is wrong.
  static Result<Msg> Decode(const std::string& frame);

  long long Int(const std::string& key, long long fallback = -1) const;
  double Number(const std::string& key, double fallback = 0) const;
  std::string Str(const std::string& key) const;  // "" when absent
  // Raw JSON of a field that is an array or object, for nested values.
  const JsonValue* Raw(const std::string& key) const;
  Msg& SetRaw(const std::string& key, const std::string& json);

 private:
  std::string type_;
  std::map<std::string, std::string> json_;  // key -> encoded value
  JsonValue parsed_;                         // when decoded
};

class FrameLink {
 public:
  FrameLink(Fd fd, size_t max_frame, size_t max_queue = 8 << 20);
  int fd() const { return fd_.get(); }
  bool broken() const { return !why_.empty(); }
  const std::string& why() const { return why_; }
  bool wants_write() const { return sent_ < out_.size(); }
  size_t received() const { return received_; }  // bytes read so far
  void set_max_frame(size_t n) { max_frame_ = n; }
  // Reads what the socket holds; complete frames are appended. A closed or
  // broken link sets why() ("closed", "frame of N bytes over the cap", ...).
  // A link broken on its write side (the peer closed: EPIPE) still gives
  // what the peer sent before it closed: its last words are read.
  void Read(std::vector<std::string>* frames);
  // Queues one frame and writes what the socket takes now.
  void Send(const std::string& payload);
  void Flush();

 private:
  Fd fd_;
  size_t max_frame_, max_queue_;
  std::string in_, out_;
  size_t sent_ = 0;
  size_t received_ = 0;
  std::string why_;
  bool read_ended_ = false;  // an end, an error or a frame over the cap was read
};

}  // namespace aml
