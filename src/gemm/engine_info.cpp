#include "gemm/engine_info.h"

#include <cstdarg>
#include <cstdio>

#include "common/cpu_features.h"
#include "common/env.h"
#include "gemm/team.h"
#include "common/wait.h"
#include "common/topology.h"
#include "gemm/blocking.h"
#include "gemm/fp32_math.h"
#include "gemm/gemm_with.h"
#include "gemm/pack_policy.h"
#include "gemm/packed_a_cache.h"
#include "gemm/partition.h"
#include "gemm/workspace.h"
#include "kernels/registry.h"

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

template <typename Ty>
std::string kernel_line(const char *name, const Topology &topo) {
  const ChosenKernel<Ty> &chosen = chosen_kernel<Ty>();
  if (!chosen.kernel) return format("  %s: no kernel family serves it; computed unpacked\n", name);
  const GemmKernel<Ty> &k = *chosen.kernel;
  const Blocking b = blocking_for(topo, k);
  const char *packing =
      k.b_in_place ? (b_packing() == BPacking::always
                          ? "always packed (HCOPS_PACK_B=always)"
                          : "read in place where the family's kernels can (op(B) = B of bf16: AMX with k and n "
                            "multiples of 32, avx512_bf16 and avx512 with k even); else packed")
      : !k.full_direct                  ? "always packed (no in-place kernel)"
      : b_packing() == BPacking::always ? "always packed (HCOPS_PACK_B=always)"
      : b_packing() == BPacking::never
          ? "read in place (HCOPS_PACK_B=never)"
          : "read in place when op(B) = B, or B^T with m <= 2 mc and kc rows within L2/2; else packed";
  const char *skinny = !k.skinny        ? "packed as any other (no skinny kernel)"
                       : skinny_allowed() ? "stream A unpacked"
                                          : "packed as any other (HCOPS_SKINNY=never)";
  const char *shallow = !k.shallow        ? "packed as any other (no shallow kernel)"
                        : skinny_allowed() ? "C written from registers, nothing packed"
                                           : "packed as any other (HCOPS_SKINNY=never)";
  const std::string tile = k.tile_note ? format(" (%s)", k.tile_note) : "";
  return format("  %s: %s, microkernel %dx%d%s, blocking mc=%ld kc=%ld nc=%ld; B %s; n <= %ld: %s; k <= %ld: %s\n",
                name, chosen.family->name, k.mr, k.nr, tile.c_str(), b.mc, b.kc, b.nc, packing, kSkinnyMaxN, skinny,
                kShallowMaxK, shallow);
}

std::string served(const KernelList &list) {
  std::string s;
  for (int i = 0; i < list.count; ++i) {
    const KernelRef &r = list.refs[i];
    s += format("%s%s:%s:%s", i ? " " : "", dtype_name(r.a), dtype_name(r.b), dtype_name(r.c));
    if (r.packed_a != r.a || r.packed_b != r.b)
      s += format("(packed %s:%s%s)", dtype_name(r.packed_a), dtype_name(r.packed_b), r.splits == 3 ? "x3" : "");
    if (r.needs) s += format("(with %s)", feature_names(r.needs).c_str());
    if (r.declines) s += "(where measured faster)";
  }
  return s;
}

// The family first fit gives f32 GEMM: what "kernel family" reports. A row
// that serves no f32 kernel (avx512_bf16) passes sgemm to the next row.
const char *family_name() {
  const ChosenKernel<Sgemm> &c = chosen_kernel<Sgemm>();
  return c.family ? c.family->name : "none";
}

// The first row this CPU runs that serves f32 GEMM, HCOPS_ISA aside: the
// "best" of the "kernel family" line.
const char *best_f32_family() {
  for (int i = 0; i < kernel_family_count(); ++i) {
    const KernelFamily &f = kernel_families()[i];
    for (int j = 0; j < f.kernels->count; ++j)
      if (f.kernels->refs[j].serves<Sgemm>() && family_runs_here(f)) return f.name;
  }
  return "none";
}

}  // namespace

std::string runnable_families() {
  std::string s;
  for (int i = first_allowed_row(); i < kernel_family_count(); ++i)
    if (family_runs_here(kernel_families()[i])) s += std::string(kernel_families()[i].name) + "\n";
  return s;
}

std::string engine_info(long m, long n, long k) {
  const CpuFeatures &f = cpu_features();
  const Topology &topo = topology();
  std::string s;
  s += format("cpu: %s (%s)\n", f.brand.c_str(), f.vendor.c_str());
  s += format("cpu features: %s\n", f.describe().c_str());
  if (f.disabled) s += format("cpu features turned off (HCOPS_CPU_DISABLE): %s\n", feature_names(f.disabled).c_str());
  s += format("kernel family: %s (best for this CPU: %s)\n", family_name(), best_f32_family());
  // Which family and tile serve each datatype combination (first fit each).
#define HCOPS_KERNEL_LINE(Ty, name) s += kernel_line<Ty>(name, topo);
  HCOPS_GEMM_DATATYPES(HCOPS_KERNEL_LINE)
#undef HCOPS_KERNEL_LINE
  const Fp32MathMode &math = fp32_math();
  s += format("fp32 math (HCOPS_FP32_MATH, every f32 GEMM but oneDNN primitives): asked %s, in effect %s%s%s%s\n",
              fp32_math_name(math.asked), fp32_math_name(math.used), math.why.empty() ? "" : " (", math.why.c_str(),
              math.why.empty() ? "" : ")");
  s += "kernel families (first fit, in this order; HCOPS_ISA=<name> skips those before it):\n";
  for (int i = 0; i < kernel_family_count(); ++i) {
    const KernelFamily &fam = kernel_families()[i];
    s += format("  %-8s %-13s needs %s; serves %s; %s\n", fam.name,
                family_runs_here(fam)               ? "runs here,"
                : features_turned_off(fam.needs) ? "turned off,"
                                                 : "not on this CPU,",
                feature_names(fam.needs).c_str(),
                served(*fam.kernels).c_str(), fam.summary);
  }
  s += format("topology: %s; %d NUMA node(s), %zu compute domain(s), %d core(s); L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n",
              topo.source.c_str(), topo.numa_nodes, topo.domains.size(), topo.total_cores(), topo.l1d >> 10,
              topo.l2 >> 10, topo.l3 >> 10);
  for (const Domain &d : topo.domains)
    s += format("  domain %d: %zu core(s) (first PU %d), packing memory on node %d%s%s\n", d.index, d.cores.size(),
                d.cores.empty() ? -1 : d.cores.front(), d.mem_node, d.mem_kind.empty() ? "" : " ", d.mem_kind.c_str());
  s += format("threads: up to %d (%s)\n", max_threads(), thread_policy());
  s += format("waiting: spin %ld us, then sleep (%s)\n", spin_ns() / 1000, spin_policy());
  // The engine's own state, for a process that calls hcops_print_info after
  // its GEMMs: how many packing workspaces it made (pooled: one per GEMM in
  // flight). A process with two copies of the engine (one per library name)
  // would show a count per copy.
  s += format("workspaces: %ld made by this engine (packing memory, pooled)\n", workspaces_created());
  if (const size_t limit = packed_a_cache_limit())
    s += format("weight cache (HCOPS_WEIGHT_CACHE): up to %zu MiB of packed weights, for PyTorch 2.x forwards without "
                "autograd; holding %zu KiB in %ld\n",
                limit >> 20, packed_a_cache_bytes() >> 10, packed_a_cache_entries());
  else s += "weight cache (HCOPS_WEIGHT_CACHE): off\n";
  if (m > 0 && n > 0 && k > 0) {
    const ChosenKernel<Sgemm> &c = chosen_kernel<Sgemm>();
    const PartitionPlan plan =
        plan_gemm(topo, m, n, k, max_threads(),
                  c.kernel ? PlanLimits{c.kernel->mr, c.kernel->nr, c.kernel->min_flops_per_thread} : PlanLimits{});
    s += format("sgemm %ld x %ld x %ld: ", m, n, k) + plan.describe();
    // As gemm.cpp's gemm_with: the skinny kernel (where it gives every
    // thread rows) and the shallow one first, then one block; where one
    // block holds a thin product, the family's measured choice among them
    // (the driver's own decision, thin_path_with; said for op(A) = A,
    // op(B) = B).
    const bool skinny = c.kernel && skinny_allowed() && c.kernel->skinny && n <= kSkinnyMaxN;
    const bool shallow = c.kernel && skinny_allowed() && c.kernel->shallow && k >= 1 && k <= kShallowMaxK;
    const Blocking blk = c.kernel ? blocking_for_product(topo, *c.kernel, k) : Blocking{};
    bool held = false;
    ThinPath path = ThinPath::one_block;
    if ((skinny || shallow) && c.kernel->thin_choice && thin_choice_allowed())
      path = thin_path_with<Sgemm>({Trans::N, Trans::N, m, n, k, 1.0f, nullptr, m, nullptr, k, 0.0f, nullptr, m},
                                   *c.kernel, &held);
    if (held) {
      static const char *const names[] = {"the skinny kernel", "the shallow kernel", "one block"};
      s += format(
          "  (NN: %s, by the %s family's measured costs for thin products one block holds; "
          "HCOPS_SKINNY=always gives the thin kernels all they apply to)\n",
          names[static_cast<int>(path)], c.family->name);
    } else {
      if (skinny)
        s += "  (n <= 16: the skinny kernels take it when its rows give every thread a piece; this plan otherwise)\n";
      if (c.kernel && !shallow) {
        const char *when = skinny ? "where the skinny kernels do not take it, " : "";
        if (single_block_bytes(*c.kernel, blk, m, n, k, true))
          s += format("  (%sone block: packed and computed by the calling thread, without the team)\n", when);
        else if (single_block_bytes(*c.kernel, blk, m, n, k, false))
          s += format(
              "  (%sone block where op(B) is read in place: computed by the calling thread, without the team)\n", when);
      }
    }
  }
  s += "environment: " + env_summary() + "\n";
  return s;
}

}  // namespace hcops
