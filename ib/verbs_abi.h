// Our own copies of the leading fields of libibverbs' structs, so aml-shim
// builds without rdma-core headers (like NCCL's ibvcore.h). verbs_abi_test.cc
// checks them against <infiniband/verbs.h> where that header exists.
#pragma once

#include <cstdint>

namespace aml {

// enum ibv_port_state's IBV_PORT_ACTIVE.
constexpr uint32_t kIbvPortActive = 4;

// The leading fields of struct ibv_port_attr, whose layout is part of
// libibverbs' stable ABI (IBVERBS_1.1); the buffer is padded for the fields
// newer versions append.
struct PortAttrPrefix {
  uint32_t state;
  uint32_t max_mtu;
  uint32_t active_mtu;
  int32_t gid_tbl_len;
  uint32_t port_cap_flags;
  uint32_t max_msg_sz;
  uint32_t bad_pkey_cntr;
  uint32_t qkey_viol_cntr;
  uint16_t pkey_tbl_len;
  uint16_t lid;
  uint16_t sm_lid;
  uint8_t lmc;
  uint8_t max_vl_num;
  uint8_t sm_sl;
  uint8_t subnet_timeout;
  uint8_t init_type_reply;
  uint8_t active_width;
  uint8_t active_speed;
  uint8_t phys_state;
  uint8_t link_layer;
};

struct DeviceAttrPrefix {  // leading fields of struct ibv_device_attr
  char fw_ver[64];
  uint64_t node_guid;
  uint64_t sys_image_guid;
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  int32_t max_qp;
  int32_t max_qp_wr;
  uint32_t device_cap_flags;
  int32_t max_sge;
  int32_t max_sge_rd;
  int32_t max_cq;
  int32_t max_cqe;
  int32_t max_mr;
  int32_t max_pd;
  int32_t max_qp_rd_atom;
  int32_t max_ee_rd_atom;
  int32_t max_res_rd_atom;
  int32_t max_qp_init_rd_atom;
  int32_t max_ee_init_rd_atom;
  int32_t atomic_cap;
  int32_t max_ee;
  int32_t max_rdd;
  int32_t max_mw;
  int32_t max_raw_ipv6_qp;
  int32_t max_raw_ethy_qp;
  int32_t max_mcast_grp;
  int32_t max_mcast_qp_attach;
  int32_t max_total_mcast_qp_attach;
  int32_t max_ah;
  int32_t max_fmr;
  int32_t max_map_per_fmr;
  int32_t max_srq;
  int32_t max_srq_wr;
  int32_t max_srq_sge;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
};

}  // namespace aml
