#include "shim/net/local_socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "shim/base/random_token.h"

namespace aml {
namespace {

std::string UniqueName() { return "aml-shim-test-" + std::to_string(getpid()) + "-" + RandomToken(); }

TEST(LocalSocket, ConnectsToTheNameAndSeesTheSameUser) {
  const std::string name = UniqueName();
  EXPECT_FALSE(ConnectLocal(name).ok());  // nobody listens yet
  auto l = ListenLocal(name);
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto c = ConnectLocal(name);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(PeerIsSameUser(c->get()));
  // The name is held: a second listener is refused.
  auto again = ListenLocal(name);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("Address already in use"), std::string::npos)
      << again.error().message;
}

TEST(LocalSocket, RefusesNamesItCannotHold) {
  EXPECT_FALSE(ListenLocal("").ok());
  EXPECT_FALSE(ListenLocal(std::string(200, 'x')).ok());
}

}  // namespace
}  // namespace aml
