#include "mem/stats.h"

#include <cstdlib>

#include "mem/allocator.h"
#include "mem/tiers.h"

namespace hcops {
namespace mem {

Counters counters;

namespace {
int row_of(const Block &b) { return b.node < 0 ? 0 : (b.node >= kStatNodes ? kStatNodes : b.node + 1); }
}  // namespace

void add_live(std::size_t bytes) {
  const std::size_t live = counters.live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = counters.peak.load(std::memory_order_relaxed);
  while (live > peak && !counters.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void count_alloc(const Block &b) {
  counters.allocations.fetch_add(1, std::memory_order_relaxed);
  add_live(b.mapped);
  counters.bytes[row_of(b)][static_cast<int>(b.pages)].fetch_add(b.mapped, std::memory_order_relaxed);
}

void count_growth(const Block &b, Pages got, std::size_t bytes) {
  add_live(bytes);
  counters.bytes[row_of(b)][static_cast<int>(got)].fetch_add(bytes, std::memory_order_relaxed);
}

std::size_t stat(const char *name) {
  const std::string n = name ? name : "";
  if (n == "live") return counters.live.load();
  if (n == "peak") return counters.peak.load();
  if (n == "allocations") return counters.allocations.load();
  if (n == "frees") return counters.frees.load();
  if (n == "fast_in_use") return counters.fast_in_use.load();
  if (n == "fallback.hugetlb_to_thp") return counters.hugetlb_to_thp.load();
  if (n == "fallback.thp_to_base") return counters.thp_to_base.load();
  if (n == "fallback.fast_to_ddr") return counters.fast_to_ddr.load();
  if (n == "fallback.to_glibc") return counters.to_glibc.load();
  if (n == "system_rule") return counters.system_rule.load();
  if (n == "policy_refused") return counters.policy_refused.load();
  if (n == "cache_hits") return counters.cache_hits.load();
  if (n == "cached") return counters.cached.load();
  if (n == "threshold") return threshold.load();
  static const char *const kinds[] = {"thp", "hugetlb", "base"};
  for (int k = 0; k < 3; ++k) {
    const std::string prefix = std::string("bytes.") + kinds[k];
    if (n == prefix) {
      std::size_t sum = 0;
      for (int row = 0; row <= kStatNodes; ++row) sum += counters.bytes[row][k].load();
      return sum;
    }
    if (n.rfind(prefix + ".node", 0) == 0) {
      const int node = std::atoi(n.c_str() + prefix.size() + 5);
      if (node >= 0 && node < kStatNodes) return counters.bytes[node + 1][k].load();
    }
  }
  return SIZE_MAX;
}

std::string stats_report() {
  auto mib = [](std::size_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; };
  std::string s =
      "hcops_mem: " + std::to_string(counters.allocations.load()) + " large allocations (" +
      std::to_string(counters.allocations.load() - counters.frees.load()) + " live), peak " +
      mib(counters.peak.load()) + " mapped\nhcops_mem: fallbacks: hugetlb->thp " +
      std::to_string(counters.hugetlb_to_thp.load()) + ", thp->base " + std::to_string(counters.thp_to_base.load()) +
      ", fast->ddr " + std::to_string(counters.fast_to_ddr.load()) + ", to glibc " +
      std::to_string(counters.to_glibc.load()) + "; rule 'system' " + std::to_string(counters.system_rule.load()) +
      "; policy refused " + std::to_string(counters.policy_refused.load()) + "; reused from the cache " +
      std::to_string(counters.cache_hits.load()) + ", cached at exit " + mib(counters.cached.load()) + "\n";
  for (int row = 0; row <= kStatNodes; ++row) {
    std::string line;
    static const char *const kinds[] = {"thp", "hugetlb", "base"};
    for (int k = 0; k < 3; ++k)
      if (const std::size_t b = counters.bytes[row][k].load()) line += std::string(" ") + kinds[k] + " " + mib(b);
    if (line.empty()) continue;
    s += "hcops_mem: allocated on " +
         (row == 0 ? std::string("the faulting CPU's node(s)") : "node " + std::to_string(row - 1)) + ":" + line + "\n";
  }
  if (!tiers().any_fast()) s += "hcops_mem: no fast memory tier here: 'fast' meant the local DDR node\n";
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace mem
}  // namespace hcops
