// The part of PMIx's ABI that aml-shim uses, declared here so that it builds
// without PMIx's headers (libpmix is loaded at run time, shim/pmix/client.h).
// These layouts are fixed by the PMIx standard and unchanged from PMIx 3 to
// 5; pmix_abi_test.cc checks them against pmix_common.h where it is installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aml::pmix {

constexpr size_t kMaxNsLen = 255;
constexpr size_t kMaxKeyLen = 511;
constexpr uint32_t kRankWildcard = UINT32_MAX - 1;
constexpr int kSuccess = 0;

// pmix_data_type_t values
constexpr uint16_t kBool = 1;
constexpr uint16_t kString = 3;
constexpr uint16_t kUint16 = 13;
constexpr uint16_t kUint32 = 14;
constexpr uint16_t kByteObject = 27;
constexpr uint8_t kScopeGlobal = 3;  // PMIX_GLOBAL: local and remote processes

// Keys (pmix_common.h)
constexpr char kJobSize[] = "pmix.job.size";      // uint32, wildcard rank
constexpr char kLocalSize[] = "pmix.local.size";  // uint32, wildcard rank
constexpr char kLocalRank[] = "pmix.lrank";       // uint16, per process
constexpr char kHostname[] = "pmix.hname";        // string, per process
constexpr char kLocalPeers[] = "pmix.lpeers";     // string "0,1,2", wildcard rank
constexpr char kCollectData[] = "pmix.collect";   // bool, fence directive

struct Proc {
  char nspace[kMaxNsLen + 1];
  uint32_t rank;
};

struct ByteObject {
  char* bytes;
  size_t size;
};

struct Value {
  uint16_t type;
  union {
    bool flag;
    char* string;
    int integer;
    uint16_t uint16;
    uint32_t uint32;
    ByteObject bo;
    // The largest member of the real union (pmix_envar_t: two pointers and
    // a char) sets its size.
    struct {
      char* a;
      char* b;
      char c;
    } envar;
  } data;
};

struct Info {
  char key[kMaxKeyLen + 1];
  uint32_t flags;
  Value value;
};

using InitFn = int (*)(Proc*, Info*, size_t);
using FinalizeFn = int (*)(const Info*, size_t);
using GetFn = int (*)(const Proc*, const char*, const Info*, size_t, Value**);
using PutFn = int (*)(uint8_t, const char*, Value*);
using CommitFn = int (*)();
using FenceFn = int (*)(const Proc*, size_t, const Info*, size_t);
using ErrorStringFn = const char* (*)(int);

}  // namespace aml::pmix
