#include "launch/line_tagger.h"

#include <cstring>

namespace aml {

LineTagger::LineTagger(std::string prefix, size_t max_line)
    : prefix_(std::move(prefix)), max_line_(max_line < 1 ? 1 : max_line) {
  // "[rank 3] " -> "[rank 3]+ "
  cont_prefix_ = prefix_;
  if (!cont_prefix_.empty() && cont_prefix_.back() == ' ') {
    cont_prefix_.back() = '+';
    cont_prefix_ += ' ';
  } else {
    cont_prefix_ += "+ ";
  }
  end_marker_ = cont_prefix_.substr(0, cont_prefix_.size() - 2) + "\\ no newline at end of output\n";
}

void LineTagger::EmitPiece(std::string_view piece, std::string* out) {
  out->append(continuing_ ? cont_prefix_ : prefix_);
  out->append(piece);
}

std::string_view LineTagger::TakeWhole(std::string_view data, std::string* first) {
  // The last line end ('\n' or '\r') in data: all before it goes out.
  std::string_view head;
  const size_t end = data.find_last_of("\n\r");
  if (end != std::string_view::npos) {
    head = data.substr(0, end + 1);
    data.remove_prefix(end + 1);
    if (!partial_.empty()) {
      // The held piece goes out with the rest of its line, in one write:
      // a reader (mpirun) never finds the line's start without its end.
      const size_t line = head.find_first_of("\n\r") + 1;
      first->append(partial_);
      first->append(head.substr(0, line));
      head.remove_prefix(line);
      partial_.clear();
    }
  }
  // The rest is held; pieces of the length limit go out (after the head:
  // then it is copied, which output of such lines alone pays).
  if (partial_.size() + data.size() >= max_line_) {
    first->append(head);
    head = {};
  }
  while (partial_.size() + data.size() >= max_line_) {
    const size_t room = max_line_ - partial_.size();
    partial_.append(data.substr(0, room));
    data.remove_prefix(room);
    first->append(partial_);
    partial_.clear();
  }
  partial_.append(data);
  return head;
}

void LineTagger::Feed(std::string_view data, std::string* out) {
  if (!tags()) {
    const std::string_view head = TakeWhole(data, out);
    out->append(head);
    return;
  }
  // Most output has no '\r': look for one once per chunk, not once per line.
  const bool has_cr = std::memchr(data.data(), '\r', data.size()) != nullptr;
  out->reserve(out->size() + data.size() + (data.size() / 32 + 2) * cont_prefix_.size());
  while (!data.empty()) {
    // Find the next line end in data.
    const char* begin = data.data();
    const char* nl = static_cast<const char*>(std::memchr(begin, '\n', data.size()));
    const char* cr = has_cr ? static_cast<const char*>(std::memchr(
                                  begin, '\r', nl ? static_cast<size_t>(nl - begin) : data.size()))
                            : nullptr;
    const char* end = cr ? cr : nl;
    size_t len = end ? static_cast<size_t>(end - begin) + 1 : 0;  // with terminator
    if (!end || partial_.size() + len > max_line_) {
      // No line end: hold it, cutting when the line would exceed the limit.
      size_t room = max_line_ - partial_.size();
      if (data.size() < room) {
        partial_.append(data);
        return;
      }
      partial_.append(data.substr(0, room));
      data.remove_prefix(room);
      FlushPartial(out);
      continue;
    }
    if (partial_.empty()) {
      EmitPiece(data.substr(0, len), out);
    } else {
      partial_.append(data.substr(0, len));
      EmitPiece(partial_, out);
      partial_.clear();
    }
    continuing_ = false;
    data.remove_prefix(len);
  }
}

void LineTagger::EmitHeld(bool cut, std::string* out) {
  if (partial_.empty()) return;
  if (!tags()) {  // as it is: nothing added
    out->append(partial_);
    partial_.clear();
    return;
  }
  EmitPiece(partial_, out);
  out->push_back('\n');
  partial_.clear();
  continuing_ = cut;  // a cut line continues in the next piece
}

void LineTagger::FlushPartial(std::string* out) { EmitHeld(true, out); }

void LineTagger::Finish(std::string* out) {
  // A held piece, or one already flushed with a '\n' that its continuation
  // would have explained: either way the stream ended without a newline.
  if (!tags()) {
    EmitHeld(false, out);  // as it is, unmarked
    return;
  }
  if (partial_.empty() && !continuing_) return;
  EmitHeld(false, out);
  out->append(end_marker_);
  continuing_ = false;
}

}  // namespace aml
