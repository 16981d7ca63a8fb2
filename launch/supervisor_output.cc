// The supervisor (supervisor_table.h): the ranks' output: read, tagged, written to the sinks and
// the log files, partial lines flushed.
#include "launch/supervisor_table.h"

namespace aml {
namespace supervise {

// ---- Output

void Supervisor::Emit(Stream& s, std::string_view data) {
  if (!data.empty()) s.sink->Write(data);
}

void Supervisor::CloseStream(Stream& s) {
  if (s.fd < 0) return;
  std::string out;
  s.tagger->Finish(&out);
  Emit(s, out);
  close(s.fd);
  s.fd = -1;
}

void Supervisor::ReadStream(Stream& s, double now) {
  static char buf[256 * 1024];
  ssize_t n = read(s.fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  // A pipe found full (its default 64 KiB) holds a chatty rank: a larger
  // one means fewer wake-ups (best effort; quiet ranks never pay for it).
  if (n >= kDefaultPipe && !s.enlarged) {
    s.enlarged = true;
    fcntl(s.fd, F_SETPIPE_SZ, kLargePipe);
  }
  if (n <= 0) {
    CloseStream(s);
    return;
  }
  std::string_view data(buf, static_cast<size_t>(n));
  output_seen_ = true;
  if (first_output_wall_ == 0) first_output_wall_ = WallSeconds();
  if (logs_) logs_->Append(s.child, s.is_stderr, data);
  s.KeepTail(data);
  bool had_partial = s.tagger->has_partial();
  out_buf_.clear();
  std::string_view head;  // untagged: the lines read, written without a copy
  if (s.tagger->tags())
    s.tagger->Feed(data, &out_buf_);
  else
    head = s.tagger->TakeWhole(data, &out_buf_);
  Emit(s, out_buf_);
  Emit(s, head);
  // A partial line held since now: none before, or the one before went out.
  if (s.tagger->has_partial() && (!had_partial || !out_buf_.empty() || !head.empty()))
    s.partial_since = now;
}

void Supervisor::FlushStaleParts(double now) {
  for (Child& c : children_) {
    for (Stream* s : {&c.out, &c.err}) {
      if (s->fd < 0 || !s->tagger->has_partial()) continue;
      if (now - s->partial_since < kPartialFlushS) continue;
      // The line's end may wait in the pipe (this shim descheduled past
      // the deadline, the rank not): read it first, as output.
      if (!s->sink->full()) {
        output_seen_ = false;
        ReadStream(*s, now);
        if (output_seen_) NoteOutput(now);
        if (s->fd < 0 || !s->tagger->has_partial() || now - s->partial_since < kPartialFlushS)
          continue;
      }
      std::string out;
      s->tagger->FlushPartial(&out);
      Emit(*s, out);
    }
  }
}

// A reader that left ends the job, as it would end a pipeline's writer.
void Supervisor::CheckSinks(double now) {
  if (reader_gone_) return;
  for (OutputSink* sink : {&out_sink_, &err_sink_}) {
    if (!sink->broken() || sink->error() != EPIPE) continue;
    reader_gone_ = true;
    const char* which = sink == &out_sink_ ? "stdout" : "stderr";
    if (sink == &out_sink_)
      LogInfo(std::string("the reader of ") + which + " has gone (EPIPE): ending the job");
    machine_.OnReaderGone(now);
    return;
  }
}

// ---- The loop

bool Supervisor::AnyOpenStream() const {
  for (const Child& c : children_)
    if (c.out.fd >= 0 || c.err.fd >= 0) return true;
  return false;
}

}  // namespace supervise
}  // namespace aml
