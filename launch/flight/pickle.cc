#include "launch/flight/pickle.h"

#include <cstring>
#include <map>

namespace aml {

const PyObj* PyObj::Get(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (auto it = dict.rbegin(); it != dict.rend(); ++it)
    if (it->first->kind == Kind::kStr && it->first->s == key) return it->second;
  return nullptr;
}

std::string PyObj::Str(std::string fallback) const {
  return kind == Kind::kStr ? s : fallback;
}

int64_t PyObj::Int(int64_t fallback) const {
  return kind == Kind::kInt ? i : fallback;
}

namespace {

std::string Hex(unsigned char c) {
  const char* d = "0123456789abcdef";
  return std::string("0x") + d[c >> 4] + d[c & 15];
}

class Machine {
 public:
  Machine(std::string_view data, const PickleLimits& limits,
          std::vector<std::unique_ptr<PyObj>>* arena)
      : in_(data), limits_(limits), arena_(arena) {}

  Result<const PyObj*> Run() {
    if (in_.size() > limits_.max_bytes)
      return Error{"it is " + std::to_string(in_.size()) + " bytes, over the cap of " +
                   std::to_string(limits_.max_bytes)};
    while (at_ < in_.size()) {
      const size_t op_at = at_;
      const unsigned char op = static_cast<unsigned char>(in_[at_++]);
      Status st = Step(op);
      if (!st.ok()) return Error{st.error().message + " (opcode " + Hex(op) + " at byte " +
                                 std::to_string(op_at) + ")"};
      if (done_) {
        if (stack_.size() != 1 || !marks_.empty()) return Error{"STOP with a broken stack"};
        return stack_[0];
      }
    }
    return Error{"it ends before its STOP (" + std::to_string(in_.size()) + " bytes)"};
  }

 private:
  Status Step(unsigned char op) {
    switch (op) {
      case 0x80:  // PROTO
        return Skip(1);
      case 0x95:  // FRAME (protocol 4): a length to skip
        return Skip(8);
      case '.':  // STOP
        done_ = true;
        return Ok();
      case '}':
        return Push(New(PyObj::Kind::kDict));
      case ']':
        return Push(New(PyObj::Kind::kList));
      case ')':
        return Push(New(PyObj::Kind::kTuple));
      case '(':  // MARK
        if (marks_.size() >= limits_.max_depth)
          return Error{"marks nest deeper than " + std::to_string(limits_.max_depth)};
        marks_.push_back(stack_.size());
        return Ok();
      case 'N':
        return Push(New(PyObj::Kind::kNone));
      case 0x88:
      case 0x89: {
        PyObj* o = New(PyObj::Kind::kBool);
        if (o) o->b = op == 0x88;
        return Push(o);
      }
      case 'J': {  // BININT: 4 bytes, signed
        uint64_t v = 0;
        if (Status st = Little(4, &v); !st.ok()) return st;
        return PushInt(static_cast<int32_t>(static_cast<uint32_t>(v)));
      }
      case 'K': {  // BININT1
        uint64_t v = 0;
        if (Status st = Little(1, &v); !st.ok()) return st;
        return PushInt(static_cast<int64_t>(v));
      }
      case 'M': {  // BININT2
        uint64_t v = 0;
        if (Status st = Little(2, &v); !st.ok()) return st;
        return PushInt(static_cast<int64_t>(v));
      }
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        uint64_t n = 0;
        if (Status st = Little(op == 0x8a ? 1 : 4, &n); !st.ok()) return st;
        if (n > 8) return Error{"an integer of " + std::to_string(n) + " bytes (past 64 bits)"};
        uint64_t v = 0;
        if (Status st = Little(static_cast<size_t>(n), &v); !st.ok()) return st;
        // Two's complement of n bytes.
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
        return PushInt(static_cast<int64_t>(v));
      }
      case 'G': {  // BINFLOAT: 8 bytes, big-endian
        if (Status st = Need(8); !st.ok()) return st;
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = bits << 8 | static_cast<unsigned char>(in_[at_ + k]);
        at_ += 8;
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        PyObj* o = New(PyObj::Kind::kFloat);
        if (o) o->f = d;
        return Push(o);
      }
      case 'X':     // BINUNICODE: 4-byte length
      case 0x8c:    // SHORT_BINUNICODE: 1-byte length
      case 0x8d:    // BINUNICODE8
      case 'B':     // BINBYTES
      case 'C':     // SHORT_BINBYTES
      case 0x8e: {  // BINBYTES8
        const size_t width = op == 0x8c || op == 'C' ? 1 : op == 0x8d || op == 0x8e ? 8 : 4;
        uint64_t n = 0;
        if (Status st = Little(width, &n); !st.ok()) return st;
        if (Status st = Need(n); !st.ok()) return st;
        const bool text = op == 'X' || op == 0x8c || op == 0x8d;
        PyObj* o = New(text ? PyObj::Kind::kStr : PyObj::Kind::kBytes);
        if (o) o->s.assign(in_.data() + at_, static_cast<size_t>(n));
        at_ += static_cast<size_t>(n);
        return Push(o);
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        if (Base() + n > stack_.size()) return Error{"a tuple of more than the stack holds"};
        PyObj* t = New(PyObj::Kind::kTuple);
        if (!t) return Full();
        t->items.assign(stack_.end() - static_cast<long>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        return Push(t);
      }
      case 't': {  // TUPLE: since the mark
        auto from = PopMark();
        if (!from.ok()) return from.error();
        PyObj* t = New(PyObj::Kind::kTuple);
        if (!t) return Full();
        t->items.assign(stack_.begin() + static_cast<long>(*from), stack_.end());
        stack_.resize(*from);
        return Push(t);
      }
      case 'a':  // APPEND
        return AppendFrom(stack_.size() - 1);
      case 'e': {  // APPENDS
        auto from = PopMark();
        if (!from.ok()) return from.error();
        return AppendFrom(*from);
      }
      case 's':  // SETITEM
        return SetFrom(stack_.size() < 2 ? stack_.size() : stack_.size() - 2);
      case 'u': {  // SETITEMS
        auto from = PopMark();
        if (!from.ok()) return from.error();
        return SetFrom(*from);
      }
      case 'q':      // BINPUT
      case 'r': {    // LONG_BINPUT
        uint64_t k = 0;
        if (Status st = Little(op == 'q' ? 1 : 4, &k); !st.ok()) return st;
        return Memo(k);
      }
      case 0x94:  // MEMOIZE
        return Memo(memo_.size());
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        uint64_t k = 0;
        if (Status st = Little(op == 'h' ? 1 : 4, &k); !st.ok()) return st;
        auto it = memo_.find(k);
        if (it == memo_.end()) return Error{"memo " + std::to_string(k) + " was never put"};
        return Push(it->second);
      }
      default:
        return Error{"an opcode the flight recorder's dumps do not use"};
    }
  }

  PyObj* New(PyObj::Kind k) {
    if (arena_->size() >= limits_.max_objects) return nullptr;
    arena_->push_back(std::make_unique<PyObj>());
    arena_->back()->kind = k;
    return arena_->back().get();
  }
  Status Full() const {
    return Error{"it makes more than " + std::to_string(limits_.max_objects) + " objects"};
  }
  Status Push(const PyObj* o) {
    if (!o) return Full();
    stack_.push_back(o);
    return Ok();
  }
  Status PushInt(int64_t v) {
    PyObj* o = New(PyObj::Kind::kInt);
    if (o) o->i = v;
    return Push(o);
  }
  Status Need(uint64_t n) const {
    if (n > in_.size() - at_) return Error{"it ends inside a value"};
    return Ok();
  }
  Status Skip(size_t n) {
    if (Status st = Need(n); !st.ok()) return st;
    at_ += n;
    return Ok();
  }
  Status Little(size_t n, uint64_t* v) {
    if (Status st = Need(n); !st.ok()) return st;
    *v = 0;
    for (size_t k = 0; k < n; ++k)
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[at_ + k])) << (8 * k);
    at_ += n;
    return Ok();
  }
  size_t Base() const { return marks_.empty() ? 0 : marks_.back(); }
  Result<size_t> PopMark() {
    if (marks_.empty()) return Error{"no MARK to close"};
    const size_t from = marks_.back();
    marks_.pop_back();
    if (from > stack_.size()) return Error{"a MARK past the stack"};
    return from;
  }
  // The values from `from` on go into the list below them.
  Status AppendFrom(size_t from) {
    if (from == 0 || from > stack_.size()) return Error{"nothing to append to"};
    PyObj* list = Mutable(stack_[from - 1]);
    if (!list || list->kind != PyObj::Kind::kList) return Error{"an append to a non-list"};
    list->items.insert(list->items.end(), stack_.begin() + static_cast<long>(from), stack_.end());
    stack_.resize(from);
    return Ok();
  }
  // The key-value pairs from `from` on go into the dict below them.
  Status SetFrom(size_t from) {
    if (from == 0 || from > stack_.size() || (stack_.size() - from) % 2)
      return Error{"a set item without its dict, or a key without a value"};
    PyObj* dict = Mutable(stack_[from - 1]);
    if (!dict || dict->kind != PyObj::Kind::kDict) return Error{"a set item in a non-dict"};
    // (A key given again is kept twice; Get reads the last, as Python would.)
    for (size_t k = from; k + 1 < stack_.size(); k += 2)
      dict->dict.emplace_back(stack_[k], stack_[k + 1]);
    stack_.resize(from);
    return Ok();
  }
  Status Memo(uint64_t k) {
    if (stack_.empty()) return Error{"a memo of an empty stack"};
    memo_[k] = stack_.back();
    return Ok();
  }
  // The arena's objects are ours: the stack holds them as const.
  static PyObj* Mutable(const PyObj* o) { return const_cast<PyObj*>(o); }

  std::string_view in_;
  size_t at_ = 0;
  PickleLimits limits_;
  std::vector<std::unique_ptr<PyObj>>* arena_;
  std::vector<const PyObj*> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, const PyObj*> memo_;
  bool done_ = false;
};

}  // namespace

Result<Pickle> Pickle::Read(std::string_view data, const PickleLimits& limits) {
  Pickle p;
  Machine m(data, limits, &p.arena_);
  auto root = m.Run();
  if (!root.ok()) return root.error();
  p.root_ = *root;
  return p;
}

}  // namespace aml
