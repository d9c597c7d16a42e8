#include "mem/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "mem/config.h"

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
  // The machine's, not counters: what AutoMem budgets against.
  if (n == "fast_capacity") {
    const Tiers &t = tiers();
    return t.domains[static_cast<std::size_t>(current_domain()) % t.domains.size()].fast_bytes;
  }
  if (n == "fast_limit") return load_config().fast_limit;
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
  names.push_back("fast_capacity");
  names.push_back("fast_limit");
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

std::string expand_stats_file(const std::string &pattern, long pid) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'p' || pattern[i + 1] == '%')) {
      out += pattern[++i] == 'p' ? std::to_string(pid) : "%";
      continue;
    }
    out += pattern[i];
  }
  return out;
}

// Opened at exit rather than at start-up: the pid of %p is then the one of
// the process that exits, so a fork child writes its own file with no
// atfork hook; no descriptor is held for the life of a host program that may
// close or count its descriptors; and a process that never exits normally
// (exec, _exit) leaves no empty file. O_APPEND and one write(2): processes
// sharing one file (no %p) add whole reports. A file that cannot be opened
// now is warned about on stderr, where the report then goes.
void write_stats_report() {
  std::string report = stats_report() + "\n";
  const Config *c = config();
  if (c && !c->stats_file.empty()) {
    const std::string path = expand_stats_file(c->stats_file, static_cast<long>(getpid()));
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) {
      const char *p = report.data();
      std::size_t left = report.size();
      while (left) {
        const ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        p += n;
        left -= static_cast<std::size_t>(n);
      }
      close(fd);
      return;
    }
    warn_once("HCOPS_MEM_STATS file", "HCOPS_MEM_STATS: cannot open %s (%s); the report follows on stderr",
              quoted(path.c_str()).c_str(), std::strerror(errno));
  }
  report.pop_back();
  print_line("%s", report.c_str());
}

}  // namespace mem
}  // namespace hcops
