#include "gemm/partition.h"

#include <algorithm>
#include <cstdio>

namespace hcops {

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

// Splits [0, len) into `parts` pieces proportional to `weights`, each a
// multiple of `align` except the last.
static std::vector<long> split(long len, const std::vector<int> &weights, long align) {
  long total = 0;
  for (int w : weights) total += w;
  std::vector<long> bounds{0};
  long acc = 0;
  for (size_t i = 0; i + 1 < weights.size(); ++i) {
    acc += weights[i];
    long b = (len * acc / total) / align * align;
    bounds.push_back(std::clamp(b, bounds.back(), len));
  }
  bounds.push_back(len);
  return bounds;
}

// The grid whose per-thread block has the smallest perimeter in tiles, i.e.
// the least packing and C traffic per flop. The planner runs in the caller's
// thread on every call: integers only, so that it raises no floating-point
// flag (FE_INEXACT) in the caller's environment. With gm * gn = threads, the
// perimeter M/gm + N/gn is (M*gn + N*gm) / threads: the numerator decides.
// A tie goes to the larger gm: threads on different rows each pack only
// their rows of A and share the part's B panel, where threads on different
// columns would each pack all of A.
static void choose_grid(DomainPart &p, int mr, int nr) {
  const long mt_max = ceil_div(p.m1 - p.m0, mr), nt_max = ceil_div(p.n1 - p.n0, nr);
  bool found = false;
  __int128 best = 0;
  for (int gm = 1; gm <= p.threads; ++gm) {
    if (p.threads % gm) continue;
    const int gn = p.threads / gm;
    if (gm > mt_max || gn > nt_max) continue;
    const __int128 cost = __int128(p.m1 - p.m0) * gn + __int128(p.n1 - p.n0) * gm;
    if (!found || cost <= best) {
      found = true;
      best = cost;
      p.grid_m = gm;
      p.grid_n = gn;
    }
  }
  if (!found) {  // more threads than tiles: the planner avoids this
    p.grid_m = p.threads;
    p.grid_n = 1;
  }
}

PartitionPlan plan_gemm(const Topology &topo, long m, long n, long k, int threads, const PlanLimits &lim) {
  PartitionPlan plan;
  const long tiles = ceil_div(m, lim.mr) * ceil_div(n, lim.nr);
  const __int128 flops = product_flops(m, n, k);
  const __int128 threads_worth = flops / std::max(lim.min_flops_per_thread, 1L);
  long useful = threads_worth < tiles ? static_cast<long>(threads_worth) : tiles;
  int t = static_cast<int>(std::clamp<long>(useful, 1, std::max(threads, 1)));

  // Domains: no more than threads, and none with a sliver of the matrix.
  const int ndom = static_cast<int>(topo.domains.size());
  const long n_slices = n / (4L * lim.nr), m_slices = m / (4L * lim.mr);
  plan.split_n = n_slices >= std::min(ndom, t) || n_slices >= m_slices;
  const long slices = plan.split_n ? n_slices : m_slices;
  int d = static_cast<int>(std::clamp<long>(std::min<long>(ndom, t), 1, std::max(slices, 1L)));

  // One domain (one thread, or one NUMA node): what the loop below gives
  // then, without its vectors, whose allocations were about a tenth of a
  // 17^3 sgemm_'s time (Zen 3, 1 thread).
  if (d == 1) {
    plan.threads = 0;
    if (tiles == 0) return plan;
    DomainPart p;
    p.mem_node = topo.domains[0].mem_node;
    p.m1 = m;
    p.n1 = n;
    p.threads = static_cast<int>(std::min<long>(tiles, t));
    choose_grid(p, lim.mr, lim.nr);
    plan.parts.push_back(p);
    plan.threads = p.threads;
    return plan;
  }

  // Threads per domain, proportional to its cores, at least one each.
  std::vector<int> per(d, 0), cores(d);
  long total_cores = 0;
  for (int i = 0; i < d; ++i) total_cores += cores[i] = std::max<int>(1, topo.domains[i].cores.size());
  int given = 0;
  for (int i = 0; i < d; ++i) given += per[i] = std::max<int>(1, static_cast<int>(t * cores[i] / total_cores));
  for (int i = 0; given < t; i = (i + 1) % d, ++given) ++per[i];
  for (int i = d - 1; given > t; i = (i + d - 1) % d)
    if (per[i] > 1) --per[i], --given;

  const std::vector<long> b = split(plan.split_n ? n : m, per, plan.split_n ? lim.nr : lim.mr);
  int first = 0;
  for (int i = 0; i < d; ++i) {
    DomainPart p;
    p.domain = i;
    p.mem_node = topo.domains[i].mem_node;
    p.m0 = plan.split_n ? 0 : b[i];
    p.m1 = plan.split_n ? m : b[i + 1];
    p.n0 = plan.split_n ? b[i] : 0;
    p.n1 = plan.split_n ? b[i + 1] : n;
    // A domain with little work keeps fewer threads; the rest stay idle.
    const long part_tiles = ceil_div(p.m1 - p.m0, lim.mr) * ceil_div(p.n1 - p.n0, lim.nr);
    if (part_tiles == 0) continue;
    p.threads = static_cast<int>(std::min<long>(part_tiles, per[i]));
    p.first_thread = first;
    first += p.threads;
    choose_grid(p, lim.mr, lim.nr);
    plan.parts.push_back(p);
  }
  plan.threads = first;
  return plan;
}

std::string PartitionPlan::describe() const {
  std::string s;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d thread(s) over %zu domain(s), split along %s\n", threads, parts.size(),
                split_n ? "N" : "M");
  s += buf;
  for (const DomainPart &p : parts) {
    std::snprintf(buf, sizeof buf,
                  "  domain %d: rows [%ld,%ld) cols [%ld,%ld), %d thread(s) as %dx%d grid, "
                  "packed panels on NUMA node %d\n",
                  p.domain, p.m0, p.m1, p.n0, p.n1, p.threads, p.grid_m, p.grid_n, p.mem_node);
    s += buf;
  }
  return s;
}

}  // namespace hcops
