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

namespace {

// The counters hcops_mem_stat() answers by name, besides the page-kind bytes
// below. stat() and stat_names() both read this table, so what is answered
// and what is listed cannot differ.
struct Named {
  const char *name;
  const std::atomic<std::size_t> *value;
};
const Named kNamed[] = {
    {"live", &counters.live},
    {"peak", &counters.peak},
    {"allocations", &counters.allocations},
    {"frees", &counters.frees},
    {"fast_in_use", &counters.fast_in_use},
    {"fallback.hugetlb_to_thp", &counters.hugetlb_to_thp},
    {"fallback.thp_to_base", &counters.thp_to_base},
    {"fallback.fast_to_ddr", &counters.fast_to_ddr},
    {"fallback.to_glibc", &counters.to_glibc},
    {"system_rule", &counters.system_rule},
    {"policy_refused", &counters.policy_refused},
    {"cache_hits", &counters.cache_hits},
    {"cached", &counters.cached},
    {"cache_evictions.cap", &counters.evicted_cap},
    {"cache_evictions.decay", &counters.evicted_decay},
    {"threshold", &threshold},
};
// Indexed by Pages.
const char *const kKinds[] = {"thp", "hugetlb", "base"};

}  // namespace

std::size_t stat(const char *name) {
  const std::string n = name ? name : "";
  for (const Named &c : kNamed)
    if (n == c.name) return c.value->load();
  for (int k = 0; k < 3; ++k) {
    const std::string prefix = std::string("bytes.") + kKinds[k];
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

std::vector<std::string> stat_names() {
  std::vector<std::string> names;
  for (const Named &c : kNamed) names.push_back(c.name);
  for (const char *kind : kKinds) {
    names.push_back(std::string("bytes.") + kind);
    names.push_back(std::string("bytes.") + kind + ".node<N>");
  }
  return names;
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
      std::to_string(counters.cache_hits.load()) + ", evicted by its bounds " +
      std::to_string(counters.evicted_cap.load()) + " and for age " + std::to_string(counters.evicted_decay.load()) +
      ", cached at exit " + mib(counters.cached.load()) + "\n";
  for (int row = 0; row <= kStatNodes; ++row) {
    std::string line;
    for (int k = 0; k < 3; ++k)
      if (const std::size_t b = counters.bytes[row][k].load()) line += std::string(" ") + kKinds[k] + " " + mib(b);
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
