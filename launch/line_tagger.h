// Tags a child's output stream line by line: each line goes out whole,
// prefixed "[rank R] ". Lines end at '\n' or '\r' (so tqdm progress bars
// are not held back). A line longer than the buffer, or a partial line held
// past its deadline, is cut; the piece that continues it is prefixed
// "[rank R]+ " so the original bytes can always be put back together.
// A partial line at end of stream is flushed with a '\n' added and then
// marked by the line "[rank R]\ no newline at end of output", so no byte is
// added without saying so.
//
// With an empty prefix (output untagged) lines still go out whole and
// nothing is added: a held piece goes out as it is, at a line end, the
// length limit, its deadline or the end. (Python with PYTHONUNBUFFERED=1
// writes print()'s text and its '\n' apart: forwarded as read, the lines of
// one-rank shims under one mpirun ran into each other.)
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace aml {

class LineTagger {
 public:
  LineTagger(std::string prefix, size_t max_line);

  // Appends `data`; returns the complete tagged text ready to write.
  void Feed(std::string_view data, std::string* out);
  // Emits a held partial line (cut, with continuation), e.g. after a timeout.
  void FlushPartial(std::string* out);
  // End of stream: emits a held partial line terminated with '\n', and the
  // marker line that says the '\n' was not the child's.
  void Finish(std::string* out);
  bool has_partial() const { return !partial_.empty(); }
  bool tags() const { return !prefix_.empty(); }  // untagged: an empty prefix
  // Untagged only, as Feed without copying `data`'s lines: appends to
  // `first` what goes out first (the piece held and the rest of its line),
  // and returns the view of `data` that goes out after it (whole lines);
  // the rest is held.
  std::string_view TakeWhole(std::string_view data, std::string* first);

 private:
  void EmitPiece(std::string_view piece, std::string* out);
  // Emits the held partial line with a '\n'; `cut`: the line continues.
  void EmitHeld(bool cut, std::string* out);
  std::string prefix_;       // "[rank 3] "
  std::string cont_prefix_;  // "[rank 3]+ "
  std::string end_marker_;   // "[rank 3]\ no newline at end of output"
  size_t max_line_;
  std::string partial_;
  bool continuing_ = false;  // the next piece continues a cut line
};

}  // namespace aml
