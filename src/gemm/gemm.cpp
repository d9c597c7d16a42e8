#include "gemm/gemm.h"

#include <omp.h>
#include <time.h>

#include <algorithm>

#include "gemm/blocking.h"
#include "gemm/gemm_verbose.h"
#include "common/log.h"
#include "kernels/kernel.h"
#include "gemm/pack_policy.h"
#include "gemm/partition.h"
#include "common/team.h"
#include "common/topology.h"
#include "gemm/workspace.h"

namespace hcops {

namespace {

template <typename T>
void scale_c(T beta, T *c, long ldc, long m, long n) {
  if (beta == T(1)) return;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) c[i + j * ldc] = beta == T(0) ? T(0) : beta * c[i + j * ldc];
}

// Last resort when packing memory cannot be had: right, slow, allocates nothing.
template <typename T>
void unpacked_gemm(const GemmArgs<T> &g) {
  for (long j = 0; j < g.n; ++j)
    for (long i = 0; i < g.m; ++i) {
      T sum = 0;
      for (long p = 0; p < g.k; ++p)
        sum += (g.ta == Trans::N ? g.a[i + p * g.lda] : g.a[p + i * g.lda]) *
               (g.tb == Trans::N ? g.b[p + j * g.ldb] : g.b[j + p * g.ldb]);
      T &c = g.c[i + j * g.ldc];
      c = g.alpha * sum + (g.beta == T(0) ? T(0) : g.beta * c);
    }
}

// KC and NC of one domain part, evened out over its k and its columns.
struct PartBlocks {
  long kc, nc;
};
template <typename T>
PartBlocks part_blocks(const GemmArgs<T> &g, const DomainPart &part, const Blocking &blk, int nr) {
  return {balanced_block(g.k, blk.kc, 8), balanced_block(part.n1 - part.n0, blk.nc, nr)};
}

template <typename T>
struct Job {
  const GemmArgs<T> &g;
  const Plan &plan;
  const KernelInfo<T> &kern;
  Blocking blk;
  Workspace &ws;
  bool direct_b;  // the microkernel reads op(B) in place; no B panel, no barriers
};

// The work of team thread `t`: its domain's share of C, tile by tile.
template <typename T>
void run_thread(const Job<T> &job, int t) {
  const GemmArgs<T> &g = job.g;
  const auto &parts = job.plan.parts;
  size_t pi = 0;
  while (pi + 1 < parts.size() && t >= parts[pi].first_thread + parts[pi].threads) ++pi;
  const DomainPart &part = parts[pi];
  const Topology &topo = topology();
  bind_to_domain(topo, topo.domains[part.domain]);

  const int r = t - part.first_thread, mr = job.kern.mr, nr = job.kern.nr;
  const int im = r % part.grid_m, in = r / part.grid_m;
  const PartBlocks pb = part_blocks(g, part, job.blk, nr);
  DomainBarrier &barrier = job.ws.barriers[pi];
  T *bp = static_cast<T *>(job.ws.b_panels[pi]->data());
  T *ap = static_cast<T *>(job.ws.a_blocks[t]->data());

  long i0, i1;
  tile_range(part.m1 - part.m0, part.grid_m, im, mr, i0, i1);
  i0 += part.m0;
  i1 += part.m0;
  bool first = true;
  for (long jc = part.n0; jc < part.n1; jc += pb.nc) {
    const long nc = std::min(pb.nc, part.n1 - jc);
    for (long pc = 0; pc < g.k; pc += pb.kc) {
      const long kc = std::min(pb.kc, g.k - pc);
      const T beta = pc == 0 ? g.beta : T(1);
      if (!job.direct_b) {
        if (!first) barrier.wait();  // nobody still reads the previous panel
        first = false;
        long jb0, jb1;
        tile_range(nc, part.threads, r, nr, jb0, jb1);
        if (jb1 > jb0) job.kern.pack_b(bp + jb0 * kc, g.b, g.ldb, g.tb, pc, kc, jc + jb0, jb1 - jb0);
        barrier.wait();
      }
      // op(B)(pc + p, jc + j) in place is b_at[p * rsb + j * csb].
      const long rsb = g.tb == Trans::N ? 1 : g.ldb, csb = g.tb == Trans::N ? g.ldb : 1;
      const T *b_at = g.b + pc * rsb + jc * csb;

      long j0, j1;
      tile_range(nc, part.grid_n, in, nr, j0, j1);
      for (long ic = i0; ic < i1; ic += job.blk.mc) {
        const long mc = std::min(job.blk.mc, i1 - ic);
        job.kern.pack_a(ap, g.a, g.lda, g.ta, ic, mc, pc, kc);
        for (long jr = j0; jr < j1; jr += nr) {
          const long ncols = std::min<long>(nr, j1 - jr);
          const T *bpanel = job.direct_b ? nullptr : bp + jr * kc, *bdirect = b_at + jr * csb;
          for (long ir = 0; ir < mc; ir += mr) {
            const long nrows = std::min<long>(mr, mc - ir);
            T *c = g.c + (ic + ir) + (jc + jr) * g.ldc;
            const T *a = ap + ir * kc;
            const bool full = nrows == mr && ncols == nr;
            if (job.direct_b && full)
              job.kern.ukernel_direct(kc, g.alpha, a, bdirect, rsb, csb, beta, c, g.ldc);
            else if (job.direct_b)
              job.kern.edge_direct(kc, g.alpha, a, bdirect, rsb, csb, beta, c, g.ldc, int(nrows), int(ncols));
            else if (full)
              job.kern.ukernel(kc, g.alpha, a, bpanel, beta, c, g.ldc);
            else
              job.kern.edge(kc, g.alpha, a, bpanel, beta, c, g.ldc, int(nrows), int(ncols));
          }
        }
      }
    }
  }
}

// Whether the microkernel reads op(B) in place rather than a packed copy;
// pack_policy.h says when that pays.
template <typename T>
bool read_b_in_place(const GemmArgs<T> &g, const KernelInfo<T> &kern, const Blocking &blk) {
  if (!kern.ukernel_direct) return false;
  switch (b_packing()) {
    case BPacking::always: return false;
    case BPacking::never: return true;
    case BPacking::automatic: break;
  }
  const size_t span = sizeof(T) * std::min(g.k, blk.kc) * g.ldb;
  return b_in_place_pays(g.tb, g.m, blk.mc, span, topology().l2);
}

// Returns the number of threads that actually computed.
template <typename T>
int execute(const GemmArgs<T> &g, const Plan &plan, const KernelInfo<T> &kern) {
  WorkspaceLease ws;
  ws->shape(plan.parts.size(), plan.threads);
  const Blocking blk = blocking_for(topology(), kern);
  const bool direct_b = read_b_in_place(g, kern, blk);
  // Every buffer is sized here, before the team starts: a buffer that grows
  // is remapped, which must never happen under a thread still reading it.
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const DomainPart &part = plan.parts[i];
    const PartBlocks pb = part_blocks(g, part, blk, kern.nr);
    ws->barriers[i].reset(part.threads);
    bool ok = direct_b || ws->b_panels[i]->ensure(sizeof(T) * pb.kc * (pb.nc + kern.nr), part.mem_node);
    for (int t = part.first_thread; t < part.first_thread + part.threads; ++t)
      ok = ok && ws->a_blocks[t]->ensure(sizeof(T) * pb.kc * (blk.mc + kern.mr), part.mem_node);
    if (!ok) {
      warn_once("oom", "no memory for GEMM packing buffers; computing without packing (slow)");
      unpacked_gemm(g);
      return 1;
    }
  }
  const Job<T> job{g, plan, kern, blk, *ws, direct_b};
  if (plan.threads == 1) {
    run_thread(job, 0);
    return 1;
  }
  bool short_team = false;
#pragma omp parallel num_threads(plan.threads)
  {
    // OMP_THREAD_LIMIT or a dynamic runtime may give fewer threads than asked.
    if (omp_get_num_threads() != plan.threads) {
#pragma omp single
      short_team = true;
    } else {
      run_thread(job, omp_get_thread_num());
    }
  }
  if (!short_team) return plan.threads;
  const Plan serial = plan_gemm(topology(), g.m, g.n, g.k, 1, PlanLimits{kern.mr, kern.nr});
  return execute(g, serial, kern);
}

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

}  // namespace

template <typename T>
void gemm(const GemmArgs<T> &g, const char *routine) {
  if (g.m == 0 || g.n == 0) return;
  const bool verbose = verbose_level() > 0;
  const double t0 = verbose ? now_seconds() : 0;
  int threads = 1;
  if (g.alpha == T(0) || g.k == 0) {
    scale_c(g.beta, g.c, g.ldc, g.m, g.n);
  } else {
    const KernelInfo<T> &kern = kernels_for(selected_isa()).template get<T>();
    const Plan plan = plan_gemm(topology(), g.m, g.n, g.k, max_threads(), PlanLimits{kern.mr, kern.nr});
    threads = execute(g, plan, kern);
  }
  if (verbose) report_gemm(routine, static_cast<char>(g.ta), static_cast<char>(g.tb), g.m, g.n, g.k,
                           double(g.alpha), g.lda, g.ldb, double(g.beta), g.ldc, threads, now_seconds() - t0);
}

template void gemm<float>(const GemmArgs<float> &, const char *);
template void gemm<double>(const GemmArgs<double> &, const char *);

}  // namespace hcops
