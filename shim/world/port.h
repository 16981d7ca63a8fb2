// A master port derived from the job's id: every rank computes the same
// value without talking, and two jobs on one host rarely collide.
#pragma once

#include <string_view>

namespace aml {

constexpr int kDerivedPortMin = 20000;
constexpr int kDerivedPortMax = 31999;  // below Linux's ephemeral range
constexpr int kDefaultMasterPort = 29500;   // torchrun's
constexpr int kAzureSingleNodePort = 54965;  // aml_mpienv.py's, one node
constexpr int kAzureMultiNodePort = 6105;    // aml_mpienv.py's, several nodes

int DerivedPort(std::string_view job_id);

}  // namespace aml
