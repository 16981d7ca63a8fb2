// A reader of Python pickles of plain values: what PyTorch's flight recorder
// dumps (docs/control-plane.md, "Naming the culprit"), and no more. It runs
// the protocol 2-5 opcodes that build None, booleans, integers, floats,
// strings, bytes, lists, tuples and dicts, with their memo; any other
// opcode (a class, a global, a reduce: code to run) is refused, as is a
// pickle past its limits: its size, the objects it makes, how deep they
// nest. Nothing is executed, nothing read is trusted beyond its shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shim/base/result.h"

namespace aml {

struct PyObj {
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;  // an integer past 64 bits is refused
  double f = 0;
  std::string s;  // kStr (UTF-8), kBytes
  std::vector<const PyObj*> items;                           // kList, kTuple
  std::vector<std::pair<const PyObj*, const PyObj*>> dict;  // kDict, in order

  bool is(Kind k) const { return kind == k; }
  // A dict's value under the string `key` (null: none, or not a dict).
  const PyObj* Get(std::string_view key) const;
  // The string, or `fallback` when this is not one.
  std::string Str(std::string fallback = "") const;
  // The integer, or `fallback` when this is not one.
  int64_t Int(int64_t fallback = -1) const;
};

struct PickleLimits {
  size_t max_bytes = 64 << 20;     // the pickle itself
  size_t max_objects = 4 << 20;    // every value it makes
  size_t max_depth = 100;          // MARKs open at once, and nesting
};

class Pickle {
 public:
  // The pickle's value, or why it is not one this reader takes: the error
  // names the opcode or the limit and the byte it was at.
  static Result<Pickle> Read(std::string_view data, const PickleLimits& limits = {});
  const PyObj& root() const { return *root_; }

 private:
  std::vector<std::unique_ptr<PyObj>> arena_;  // every object: references share them
  const PyObj* root_ = nullptr;
};

}  // namespace aml
