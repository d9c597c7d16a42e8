// libhcops_mem's statistics: the counters hcops_mem_stat() answers by name
// and the HCOPS_MEM_STATS report. Relaxed atomics: each counter is exact, but
// several read one after the other are not a snapshot.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "mem/arena.h"

namespace hcops {
namespace mem {

constexpr int kStatNodes = 64;  // nodes >= 63 share the last row

struct Counters {
  std::atomic<std::size_t> live{0}, peak{0}, allocations{0}, frees{0}, fast_in_use{0};
  std::atomic<std::size_t> hugetlb_to_thp{0}, thp_to_base{0}, fast_to_ddr{0}, to_glibc{0}, system_rule{0},
      policy_refused{0};
  std::atomic<std::size_t> cache_hits{0}, cached{0}, evicted_cap{0}, evicted_decay{0};
  std::atomic<std::size_t> bytes[kStatNodes + 1][3] = {};  // [node + 1][pages], cumulative
};
extern Counters counters;

// `bytes` more mapped in live blocks; raises the peak.
void add_live(std::size_t bytes);
// One allocation of block `b` (fresh or reused).
void count_alloc(const Block &b);
// `bytes` of page kind `got` mapped onto block `b` as it grows in place.
void count_growth(const Block &b, Pages got, std::size_t bytes);

// Named counters for hcops_mem_stat(); SIZE_MAX for an unknown name.
std::size_t stat(const char *name);
// Every name stat() answers, the per-node ones as "bytes.<kind>.node<N>"
// (N from 0 to kStatNodes - 1). include/hcops.h must document each.
std::vector<std::string> stat_names();
// The HCOPS_MEM_STATS report, one line each.
std::string stats_report();

// `pattern` with %p replaced by `pid` and %% by a single %; any other % is
// kept as it is.
std::string expand_stats_file(const std::string &pattern, long pid);
// Writes the report where HCOPS_MEM_STATS says: run at exit (allocator.cpp).
void write_stats_report();

}  // namespace mem
}  // namespace hcops
