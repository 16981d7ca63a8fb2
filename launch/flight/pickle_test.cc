#include "launch/flight/pickle.h"

#include <gtest/gtest.h>

#include <string>

namespace aml {
namespace {

using namespace std::string_literals;

// pickle.dumps({'a': [1, -2, 300, 70000, 2**40, -2**63, True, None, 1.5,
// ('x', 'y'), b'\x00'], 'b': {'c': 'é'}}, protocol=4), as Python 3.11 writes it.
const std::string kProtocol4 =
    "\x80\x04\x95W\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01" "a\x94]\x94(K\x01J\xfe\xff\xff\xffM,"
    "\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80\x88NG?"
    "\xf8\x00\x00\x00\x00\x00\x00\x8c\x01x\x94\x8c\x01y\x94\x86\x94" "C\x01\x00\x94" "e\x8c\x01"
    "b\x94}\x94\x8c\x01" "c\x94\x8c\x02\xc3\xa9\x94su."s;

TEST(Pickle, ReadsPlainValuesOfProtocol4) {
  auto p = Pickle::Read(kProtocol4);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const PyObj& d = p->root();
  ASSERT_TRUE(d.is(PyObj::Kind::kDict));
  const PyObj* a = d.Get("a");
  ASSERT_TRUE(a && a->is(PyObj::Kind::kList));
  ASSERT_EQ(a->items.size(), 11u);
  EXPECT_EQ(a->items[0]->Int(), 1);
  EXPECT_EQ(a->items[1]->Int(), -2);
  EXPECT_EQ(a->items[2]->Int(), 300);
  EXPECT_EQ(a->items[3]->Int(), 70000);
  EXPECT_EQ(a->items[4]->Int(), int64_t{1} << 40);
  EXPECT_EQ(a->items[5]->Int(), INT64_MIN);
  EXPECT_TRUE(a->items[6]->is(PyObj::Kind::kBool) && a->items[6]->b);
  EXPECT_TRUE(a->items[7]->is(PyObj::Kind::kNone));
  EXPECT_DOUBLE_EQ(a->items[8]->f, 1.5);
  ASSERT_TRUE(a->items[9]->is(PyObj::Kind::kTuple));
  EXPECT_EQ(a->items[9]->items[1]->Str(), "y");
  EXPECT_TRUE(a->items[10]->is(PyObj::Kind::kBytes));
  EXPECT_EQ(a->items[10]->s, "\0"s);
  EXPECT_EQ(d.Get("b")->Get("c")->Str(), "\xc3\xa9");
  EXPECT_EQ(d.Get("missing"), nullptr);
  EXPECT_EQ(a->Get("a"), nullptr) << "a list has no keys";
}

TEST(Pickle, MemoSharesOneObject) {
  // protocol 2: [x, x] with x = {} put in memo 1 and got back.
  auto p = Pickle::Read("\x80\x02]q\x00(}q\x01h\x01" "e."s);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->root().items.size(), 2u);
  EXPECT_EQ(p->root().items[0], p->root().items[1]);
}

TEST(Pickle, LastKeyWinsAsInPython) {
  auto p = Pickle::Read("\x80\x02}(X\x01\x00\x00\x00kK\x01X\x01\x00\x00\x00kK\x02u."s);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->root().Get("k")->Int(), 2);
}

TEST(Pickle, RefusesCodeAndSaysWhere) {
  // protocol 2's bytes: _codecs.encode through GLOBAL and REDUCE.
  auto p = Pickle::Read("\x80\x02" "c_codecs\nencode\nq\x00."s);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("opcode 0x63 at byte 2"), std::string::npos)
      << p.error().message;
  auto r = Pickle::Read("\x80\x02NNR."s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("opcode 0x52"), std::string::npos) << r.error().message;
}

TEST(Pickle, RefusesWhatIsBrokenOrCut) {
  for (const std::string& bad : {
           ""s,                                   // nothing
           "\x80\x02"s,                           // no STOP
           "\x80\x02X\xff\xff\xff\x7f" "abc."s,   // a string past the end
           "\x80\x02" "e."s,                      // APPENDS with no MARK
           "\x80\x02K\x01" "a."s,                 // APPEND to an int
           "\x80\x02}K\x01s."s,                   // SETITEM without a value
           "\x80\x02h\x05."s,                     // a memo never put
           "\x80\x02NN."s,                        // STOP with two values
           "\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s,  // past 64 bits
           "\x80\x02(."s,                         // STOP inside a MARK
       }) {
    auto p = Pickle::Read(bad);
    EXPECT_FALSE(p.ok()) << "read: " << ::testing::PrintToString(bad);
  }
}

TEST(Pickle, KeepsToItsLimits) {
  PickleLimits small;
  small.max_bytes = 8;
  auto big = Pickle::Read("\x80\x02X\x04\x00\x00\x00" "abcd."s, small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("over the cap of 8"), std::string::npos);

  PickleLimits few;
  few.max_objects = 3;
  auto many = Pickle::Read("\x80\x02](K\x01K\x02K\x03K\x04" "e."s, few);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("more than 3 objects"), std::string::npos);

  // 200 nested MARKs (the default depth is 100): refused, not a deep stack.
  auto deep = Pickle::Read("\x80\x02" + std::string(200, '(') + "."s);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("deeper than 100"), std::string::npos);
}

TEST(Pickle, DeepAndCyclicValuesAreOnlyData) {
  // Lists nested 100,000 deep with no MARK (each APPEND puts the top list in
  // the one below it), and a list that holds itself (through the memo): read
  // as data, never by recursion here or when freed.
  auto deep = Pickle::Read("\x80\x02"s + std::string(100000, ']') + std::string(99999, 'a') + "."s);
  ASSERT_TRUE(deep.ok()) << deep.error().message;
  EXPECT_EQ(deep->root().items.size(), 1u);
  auto cycle = Pickle::Read("\x80\x02]q\x00h\x00" "a."s);
  ASSERT_TRUE(cycle.ok()) << cycle.error().message;
  EXPECT_EQ(cycle->root().items[0], &cycle->root());
}

}  // namespace
}  // namespace aml
