#include "launch/flight/fr_harvest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shim/base/read_no_follow.h"
#include "shim/base/units.h"

namespace aml {
namespace {

constexpr size_t kMaxWhy = 300;

long long MtimeNs(const struct stat& st) {
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

// A regular file of ours, not a link.
bool StatFile(const std::string& path, struct stat* st) {
  return lstat(path.c_str(), st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.substr(0, kMaxWhy);
}

}  // namespace

std::string AskForDump(const std::string& pipe, char what) {
  struct stat st {};
  if (lstat(pipe.c_str(), &st) != 0)
    return errno == ENOENT ? "no flight-recorder pipe (not a torch.distributed rank, or its "
                             "Python did not load aml-shim's agent)"
                           : "its pipe " + pipe + ": " + std::strerror(errno);
  if (!S_ISFIFO(st.st_mode)) return "its pipe " + pipe + " is not a FIFO";
  const int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENXIO ? "nothing reads its flight-recorder pipe"
                          : "its pipe " + pipe + ": " + std::strerror(errno);
  // What was opened is still the FIFO (not a file put there meanwhile).
  std::string why;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    why = "its pipe " + pipe + " is not a FIFO";
  } else if (write(fd, &what, 1) != 1 && errno != EAGAIN) {  // full: asked already
    why = "its pipe " + pipe + ": " + std::strerror(errno);
  }
  close(fd);
  return why;
}

bool FlightHarvest::Seen::Update(const struct stat& st) {
  const bool changed = st.st_dev != dev || st.st_ino != ino || MtimeNs(st) != mtime_ns ||
                       st.st_size != size;
  dev = st.st_dev;
  ino = st.st_ino;
  mtime_ns = MtimeNs(st);
  size = st.st_size;
  return changed;
}

void FlightHarvest::Start(const std::vector<Ask>& asks, double now, double timeout_s,
                          bool light) {
  outcomes_.assign(asks.size(), {});
  states_.assign(asks.size(), {});
  pending_ = 0;
  timeout_s_ = timeout_s;
  deadline_ = now + timeout_s;
  light_ = light;
  for (size_t i = 0; i < asks.size(); ++i) {
    Outcome& o = outcomes_[i];
    State& s = states_[i];
    o.rank = asks[i].rank;
    if (!asks[i].files) {
      o.why = "--flight-recorder off, or its variables unset";
      continue;
    }
    s.files = *asks[i].files;
    // The dumps as they are before the ask: an older one is not the answer
    // (an exception's, written only as the rank ends, always is).
    struct stat st {};
    if (StatFile(s.files.dump, &st)) s.dump.Update(st);
    // A rank an exception ended left its record as it ended (unasked, and
    // perhaps before this ask): a hang's or a failure's ask takes it.
    if (!light && StatFile(s.files.exit, &st)) {
      s.pending = true;
      ++pending_;
      continue;
    }
    if (!asks[i].running) {
      o.why = "it had ended";
      continue;
    }
    // What the agent said when it could not serve (torch too old).
    const std::string said = ReadNoFollow(AT_FDCWD, s.files.why, kMaxWhy);
    if (light && StatFile(s.files.light, &st)) s.light.Update(st);
    const std::string why = AskForDump(s.files.pipe, light ? kAskLight : kAskFull);
    if (!why.empty()) {
      o.why = said.empty() ? why : OneLine(said);
      continue;
    }
    s.pending = true;
    ++pending_;
  }
}

void FlightHarvest::Look(size_t i, bool last) {
  State& s = states_[i];
  Outcome& o = outcomes_[i];
  // The agent's mark, looked at before the dump: it goes only after the
  // record with stack traces is in place, so a dump read after the mark is
  // seen gone is that record.
  struct stat st {};
  const bool more = !light_ && lstat(s.files.more.c_str(), &st) == 0;
  // A look takes the agent's record for looks, or torch's own reader's.
  bool read = light_ && Read(i, s.files.light, &s.light, false);
  if (!read) read = Read(i, s.files.dump, &s.dump, more);
  if (!read && !light_) read = Read(i, s.files.exit, &s.exit, false);
  if (!read && s.early && !more)
    TakeEarly(i, "");  // the mark went after the record read last was written
  if (s.pending) {
    const std::string said = ReadNoFollow(AT_FDCWD, s.files.why, kMaxWhy);
    if (!said.empty() && s.early) {
      TakeEarly(i, "the dump with them failed: " + OneLine(said));
    } else if (!said.empty()) {
      o.why = OneLine(said);
      s.pending = false;
    }
  }
  if (s.pending && last)
    GiveUp(i, "the dump with them did not come within --dump-timeout " +
                  FormatRate(timeout_s_) + " s",
           "no dump within --dump-timeout " + FormatRate(timeout_s_) + " s");
  if (!s.pending) --pending_;
}

bool FlightHarvest::Read(size_t i, const std::string& path, Seen* seen, bool more) {
  State& s = states_[i];
  Outcome& o = outcomes_[i];
  struct stat st {};
  if (!StatFile(path, &st) || !seen->Update(st)) return false;
  if (static_cast<unsigned long long>(st.st_size) > kMaxFrDump) {
    o.why = "its dump is " + FormatBytes(static_cast<uint64_t>(st.st_size)) +
            ", over the cap of " + FormatBytes(kMaxFrDump) + ": not read";
    s.pending = false;
    return true;
  }
  const std::string data = ReadNoFollow(AT_FDCWD, path, kMaxFrDump);
  std::vector<FrEntryTimes> times;
  auto summary = SummarizeDump(data, o.rank, &times);
  if (!summary.ok()) {
    s.error = summary.error().message;  // half written, perhaps: looked at again
  } else if (more) {
    s.early = std::move(*summary);  // the one with stack traces is still to come
    s.early_times = std::move(times);
  } else {
    o.fr = std::move(*summary);
    o.times = std::move(times);
    o.dump = path;
    s.pending = false;
  }
  return true;
}

void FlightHarvest::TakeEarly(size_t i, std::string note) {
  State& s = states_[i];
  Outcome& o = outcomes_[i];
  o.fr = std::move(s.early);
  o.fr->no_stacks = note.substr(0, kMaxNoStacks);
  o.times = std::move(s.early_times);
  o.dump = s.files.dump;
  o.why.clear();
  s.early.reset();
  s.pending = false;
}

// Waited for no longer: the record read while the mark stood, noted
// `early_note`; or why there is none (`none_why`, or the broken dump's).
void FlightHarvest::GiveUp(size_t i, std::string early_note, const std::string& none_why) {
  State& s = states_[i];
  if (s.early) return TakeEarly(i, std::move(early_note));
  outcomes_[i].why = s.error.empty() ? none_why : "its dump is broken: " + OneLine(s.error);
  s.pending = false;
}

void FlightHarvest::Settle() {
  for (size_t i = 0; i < states_.size(); ++i) {
    if (!states_[i].pending) continue;
    GiveUp(i, "the rank ended before the dump with them was written",
           "it ended before its record came");
    --pending_;
  }
}

bool FlightHarvest::Poll(double now) {
  const bool last = now >= deadline_;
  for (size_t i = 0; i < states_.size() && pending_ > 0; ++i)
    if (states_[i].pending) Look(i, last);
  return done();
}

}  // namespace aml
