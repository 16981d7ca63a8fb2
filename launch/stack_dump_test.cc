#include "launch/stack_dump.h"

#include <gtest/gtest.h>

namespace aml {
namespace {

// What Python 3.11's faulthandler wrote for a rank blocked in a Gloo
// all-reduce with one helper thread, after other output.
constexpr char kDump[] =
    "epoch 1 loss 0.5\n"
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007f3a1c7fe6c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f3a2b1f4740 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", "
    "line 1536 in all_reduce\n"
    "  File \"/tmp/x/hang.py\", line 20 in main\n"
    "  File \"/tmp/x/hang.py\", line 30 in <module>\n"
    "\n"
    "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n";

TEST(StackDump, MainThreadIsTheLastListed) {
  auto s = ParseFaulthandlerDump(kDump);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->threads, 2);
  ASSERT_EQ(s->main_thread.size(), 3u);
  EXPECT_EQ(s->main_thread[0].function, "all_reduce");
  EXPECT_EQ(s->main_thread[0].line, 1536);
  EXPECT_EQ(s->main_thread[1].file, "/tmp/x/hang.py");
  EXPECT_EQ(StackSignature(s->main_thread),
            "all_reduce (distributed_c10d.py:1536) < main (hang.py:20) < <module> (hang.py:30)");
  EXPECT_EQ(StackSignature(s->main_thread, 1), "all_reduce (distributed_c10d.py:1536)");
  EXPECT_EQ(s->text.rfind("Fatal Python error: Aborted", 0), 0u);
  EXPECT_EQ(s->text.find("epoch"), std::string::npos);
}

TEST(StackDump, NoDumpNoStack) {
  EXPECT_FALSE(ParseFaulthandlerDump("Segmentation fault\n"));
  EXPECT_FALSE(ParseFaulthandlerDump(""));
  // A header without any thread block (cut off) is not a stack.
  EXPECT_FALSE(ParseFaulthandlerDump("Fatal Python error: Aborted\n\n"));
}

TEST(StackDump, OutputAfterTheDumpIsNotPartOfIt) {
  std::string text = std::string(kDump) + "Aborted (core dumped)\n";
  auto s = ParseFaulthandlerDump(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->main_thread.size(), 3u);
  // A frame line that is garbled ends nothing it should not.
  auto g = ParseFaulthandlerDump(
      "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
      "  File \"a.py\", line x in f\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->main_thread.empty());
}

TEST(StackDump, TheLastDumpCounts) {
  std::string two = std::string(kDump) +
                    "Fatal Python error: Aborted\n\nCurrent thread 0x1 (most recent call first):\n"
                    "  File \"b.py\", line 3 in g\n";
  auto s = ParseFaulthandlerDump(two);
  ASSERT_TRUE(s);
  EXPECT_EQ(StackSignature(s->main_thread), "g (b.py:3)");
}

}  // namespace
}  // namespace aml

namespace aml {
namespace {

TEST(StackDump, ARankEndingByAnExceptionIsPlacedByItsTraceback) {
  // As a CI run printed it: rank 1's all_reduce raised (a rank of the other
  // node was ended first), then SIGABRT came with no Python frame left.
  const std::string tail =
      "Traceback (most recent call last):\n"
      "  File \"/tmp/t/hang_ddp.py\", line 38, in <module>\n"
      "    main()\n"
      "  File \"/tmp/t/hang_ddp.py\", line 33, in main\n"
      "    dist.all_reduce(loss.detach())  # mark: all_reduce\n"
      "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line "
      "1541, in all_reduce\n"
      "    work = default_pg.allreduce([tensor], opts)\n"
      "RuntimeError: [/gloo/transport/tcp/pair.cc:598] Connection closed by peer\n"
      "Fatal Python error: Aborted\n\n"
      "Current thread 0x00007f06ae170040 (most recent call first):\n"
      "  <no Python frame>\n";
  auto dump = ParseFaulthandlerDump(tail);
  ASSERT_TRUE(dump);
  EXPECT_TRUE(dump->main_thread.empty());
  const auto frames = ParseLastTraceback(tail.substr(0, tail.rfind("Fatal Python error")));
  EXPECT_EQ(StackSignature(frames),
            "all_reduce (distributed_c10d.py:1541) < main (hang_ddp.py:33) < <module> "
            "(hang_ddp.py:38)");
  EXPECT_TRUE(ParseLastTraceback("no traceback here\n").empty());
}

}  // namespace
}  // namespace aml
