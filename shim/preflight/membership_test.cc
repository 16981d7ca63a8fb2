#include "shim/preflight/membership.h"

#include <gtest/gtest.h>

#include "shim/base/sha256.h"

namespace aml {
namespace {

EnvSnapshot Env(std::map<std::string, std::string> vars) { return EnvSnapshot(std::move(vars)); }

// No secret and no munged (here: a library that is not libmunge): no proof,
// and why says what that allows. (With munged: tests/e2e/test_replay.py.)
TEST(Membership, NoSecretNoMungeNoProof) {
  auto m = MembershipToken(Env({{"SLURM_JOB_ID", "7"}, {"AML_SHIM_LIBMUNGE", "libm.so.6"}}), {});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->token, "");
  EXPECT_EQ(m->munge, nullptr);
  EXPECT_EQ(m->prover().kind(), ProofKind::kNone);
  EXPECT_EQ(m->why.rfind("no job secret (no AML_SHIM_JOB_SECRET, none from the launcher, no "
                         "PMIx) and no MUNGE (libm.so.6 is not libmunge (the MUNGE client "
                         "library): it lacks munge_encode, munge_decode, munge_strerror, "
                         "munge_ctx_create, munge_ctx_get, munge_ctx_destroy): a process outside "
                         "the job",
                         0),
            0u)
      << m->why;
}

TEST(Membership, YourSecretComesFirstThenTheLaunchersThenTheRendezvous) {
  const std::string secret = "0123456789abcdef0123";
  auto mine = MembershipToken(Env({{"AML_SHIM_JOB_SECRET", secret},
                                   {"OMPI_MCA_orte_precondition_transports", "aa-bb"}}),
                              {"rv", "the rendezvous"});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->why, "AML_SHIM_JOB_SECRET");
  EXPECT_EQ(mine->token, SecretDigest("preflight", secret));
  EXPECT_EQ(mine->token.find(secret), std::string::npos);

  auto ompi = MembershipToken(Env({{"OMPI_MCA_orte_precondition_transports", "aa-bb"}}),
                              {"rv", "the rendezvous"});
  ASSERT_TRUE(ompi.ok());
  EXPECT_EQ(ompi->why, "OMPI_MCA_orte_precondition_transports");
  EXPECT_EQ(ompi->token, SecretDigest("preflight", "aa-bb"));

  auto rv = MembershipToken(Env({}), {"rv-token", "rank 0's token over PMIx"});
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(rv->why, "rank 0's token over PMIx");
  EXPECT_EQ(rv->token, SecretDigest("preflight", "rv-token"));
  // What the rendezvous's listener answers anyone is another digest.
  EXPECT_NE(rv->token, SecretDigest("reach", "rv-token"));
}

TEST(Membership, AShortSecretIsRefusedWithoutEchoingIt) {
  auto m = MembershipToken(Env({{"AML_SHIM_JOB_SECRET", "hunter2"}}), {});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("AML_SHIM_JOB_SECRET has 7 characters"), std::string::npos)
      << m.error().message;
  EXPECT_EQ(m.error().message.find("hunter2"), std::string::npos);
  EXPECT_FALSE(MembershipToken(Env({{"AML_SHIM_JOB_SECRET", ""}}), {}).ok());
}

}  // namespace
}  // namespace aml
