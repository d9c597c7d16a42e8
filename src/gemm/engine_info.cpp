#include "gemm/engine_info.h"

#include <cstdarg>
#include <cstdio>

#include "gemm/blocking.h"
#include "common/cpu_features.h"
#include "common/env.h"
#include "kernels/kernel.h"
#include "gemm/pack_policy.h"
#include "gemm/partition.h"
#include "common/team.h"
#include "common/topology.h"

namespace hcops {

namespace {

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

template <typename T>
std::string kernel_line(const char *name, const KernelInfo<T> &k, const Topology &topo) {
  const Blocking b = blocking_for(topo, k);
  const char *packing = !k.ukernel_direct                    ? "always packed (no in-place kernel)"
                        : b_packing() == BPacking::always ? "always packed (HCOPS_PACK_B=always)"
                        : b_packing() == BPacking::never  ? "read in place (HCOPS_PACK_B=never)"
                                                          : "read in place when op(B) = B, or B^T with m <= 2 mc and kc rows within L2/2; else packed";
  return format("  %s: microkernel %dx%d, blocking mc=%ld kc=%ld nc=%ld; B %s\n", name, k.mr, k.nr, b.mc, b.kc,
                b.nc, packing);
}

}  // namespace

std::string engine_info(long m, long n, long k) {
  const CpuFeatures &f = cpu_features();
  const Topology &topo = topology();
  const KernelSet &ks = kernels_for(selected_isa());
  std::string s;
  s += format("cpu: %s (%s)\n", f.brand.c_str(), f.vendor.c_str());
  s += format("cpu features: %s\n", f.describe().c_str());
  s += format("kernel family: %s (best for this CPU: %s)\n", isa_name(selected_isa()), isa_name(best_isa(f)));
  s += kernel_line("sgemm", ks.s, topo);
  s += kernel_line("dgemm", ks.d, topo);
  s += format("topology: %s; %d NUMA node(s), %zu compute domain(s), %d core(s); L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n",
              topo.source.c_str(), topo.numa_nodes, topo.domains.size(), topo.total_cores(), topo.l1d >> 10,
              topo.l2 >> 10, topo.l3 >> 10);
  for (const Domain &d : topo.domains)
    s += format("  domain %d: %zu core(s) (first PU %d), packing memory on node %d%s%s\n", d.index, d.cores.size(),
                d.cores.empty() ? -1 : d.cores.front(), d.mem_node, d.mem_kind.empty() ? "" : " ",
                d.mem_kind.c_str());
  s += format("threads: up to %d (%s)\n", max_threads(), thread_policy());
  if (m > 0 && n > 0 && k > 0) {
    const Plan plan = plan_gemm(topo, m, n, k, max_threads(), PlanLimits{ks.s.mr, ks.s.nr});
    s += format("sgemm %ld x %ld x %ld: ", m, n, k) + plan.describe();
  }
  s += "environment: " + env_summary() + "\n";
  return s;
}

}  // namespace hcops
