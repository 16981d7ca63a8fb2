// The fence on the job's record in a --log-dir that several shims share
// (docs/control-plane.md, "What a shared log dir says"). Every record a
// shim writes carries a stamp: the root's term it knows of (1: rank 0's
// shim; each new root one more; 0: a shim alone, no control plane), who
// wrote it, and whether the writer held the job then (the root of that
// term, with a majority since its last pause) or only ended its part. The
// rule of what may replace what is one function, the same for LogDir and
// for the simulator's shared log dir (shim/sim):
//   - a holder's record replaces any record of the run of an older or the
//     same term, and a part's of any term; never a holder's of a newer one;
//   - a part's record is written only where none of the run stands, or
//     over a part's of an older term: it never replaces a holder's word;
//   - a record of another run is always replaced.
// A shim that lost the job (no majority, stepped down for a newer root)
// writes no record here at all: its word goes to its own node's file.
#pragma once

#include <string>

namespace aml {

struct RecordStamp {
  int term = 0;
  int shim = -1;        // the writer's rank among the shims (-1: alone)
  std::string writer;   // "rank 0's shim on n1" ("" alone)
  bool holder = true;   // it held the job in `term`
};

// `object` (a JSON object) with the stamp's members: "term", "writer" and
// "holder" (none for a shim alone: term 0).
std::string Stamped(const std::string& object, const RecordStamp& stamp);
// The stamp a stored record carries (a record without one: term 0, a
// holder's, as a shim alone writes it).
RecordStamp StampOf(const std::string& record);
// Whether a record stamped `incoming` may replace `stored`, a record of
// the same run (above).
bool MayReplace(const RecordStamp& stored, const RecordStamp& incoming);
// Whether a record stamped `stamp` may be written over `stored` ("": none;
// `same_run`: `stored` is of the writer's run), or the fence keeps `stored`.
bool MayWrite(const std::string& stored, bool same_run, const RecordStamp& stamp);
// The record the job's root writes when the job ended well (exit_code 0),
// so that no stale record can stand as the job's word: an old root's, or a
// part's written before or after (a shim frozen through the job's end that
// wakes and writes that it lost the control plane). Written by the holder
// of a job with a control plane (term 1 or more); a shim alone writes none.
std::string EndedWellJson(const std::string& run_id);
inline bool WritesEndedWell(const RecordStamp& stamp) { return stamp.holder && stamp.term > 0; }
// The file a shim that does not hold the job writes its word into, beside
// failure.json: failure.shim-K.json (K: its rank among the shims).
std::string NodeRecordName(int shim);

}  // namespace aml
