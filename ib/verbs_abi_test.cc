#include "ib/verbs_abi.h"

#include <gtest/gtest.h>

#include <cstddef>

#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>

namespace aml {
namespace {

#define SAME_OFFSET(ours, theirs, field) \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #field)
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, state);
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, gid_tbl_len);
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, lid);
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, active_speed);
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, phys_state);
SAME_OFFSET(PortAttrPrefix, ibv_port_attr, link_layer);
SAME_OFFSET(DeviceAttrPrefix, ibv_device_attr, vendor_part_id);
SAME_OFFSET(DeviceAttrPrefix, ibv_device_attr, phys_port_cnt);
static_assert(kIbvPortActive == IBV_PORT_ACTIVE, "enum ibv_port_state");
static_assert(sizeof(ibv_port_attr) <= 512, "query buffer too small");
static_assert(sizeof(ibv_device_attr) <= 1024, "query buffer too small");

TEST(VerbsAbi, MatchesRdmaCoreHeaders) { SUCCEED() << "checked at compile time"; }

}  // namespace
}  // namespace aml
#else
TEST(VerbsAbi, MatchesRdmaCoreHeaders) { GTEST_SKIP() << "no <infiniband/verbs.h> here"; }
#endif
