#include "gemm.h"

#include <omp.h>
#include <time.h>

#include <algorithm>

#include "blocking.h"
#include "gemm_verbose.h"
#include "log.h"
#include "kernels/kernel.h"
#include "pack.h"
#include "partition.h"
#include "team.h"
#include "topology.h"
#include "workspace.h"

namespace hcops {

namespace {

// [begin, end) of piece `idx` when `len` is cut into `parts` pieces whose
// boundaries fall on multiples of `align`.
inline void chunk(long len, int parts, int idx, long align, long &begin, long &end) {
  const long units = (len + align - 1) / align;
  const long per = units / parts, extra = units % parts;
  const long u0 = idx * per + std::min<long>(idx, extra);
  const long u1 = u0 + per + (idx < extra ? 1 : 0);
  begin = std::min(len, u0 * align);
  end = std::min(len, u1 * align);
}

template <typename T>
void scale_c(T beta, T *c, long ldc, long m, long n) {
  if (beta == T(1)) return;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) c[i + j * ldc] = beta == T(0) ? T(0) : beta * c[i + j * ldc];
}

template <typename T>
struct Job {
  const GemmArgs<T> &g;
  const Plan &plan;
  const KernelInfo<T> &kern;
  Blocking blk;
  Workspace &ws;
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
  const long mpart = part.m1 - part.m0, npart = part.n1 - part.n0;
  const long kc_max = balanced_block(g.k, job.blk.kc, 8);
  const long nc_max = balanced_block(npart, job.blk.nc, nr);
  DomainBarrier &barrier = job.ws.barriers[pi];

  T *bp = static_cast<T *>(job.ws.b_panels[pi]->ensure(sizeof(T) * kc_max * (nc_max + nr), part.mem_node));
  T *ap = static_cast<T *>(job.ws.a_blocks[t]->ensure(sizeof(T) * kc_max * (job.blk.mc + mr), part.mem_node));
  alignas(64) T edge[64 * 16];  // mr x nr scratch for partial tiles

  long i0, i1;
  chunk(mpart, part.grid_m, im, mr, i0, i1);
  i0 += part.m0;
  i1 += part.m0;
  bool first = true;
  for (long jc = part.n0; jc < part.n1; jc += nc_max) {
    const long nc = std::min(nc_max, part.n1 - jc);
    for (long pc = 0; pc < g.k; pc += kc_max) {
      const long kc = std::min(kc_max, g.k - pc);
      const T beta = pc == 0 ? g.beta : T(1);
      if (!first) barrier.wait();  // nobody still reads the previous panel
      first = false;
      long jb0, jb1;
      chunk(nc, part.threads, r, nr, jb0, jb1);
      if (jb1 > jb0) pack_b(bp + jb0 * kc, g.b, g.ldb, g.tb, pc, kc, jc + jb0, jb1 - jb0, nr);
      barrier.wait();

      long j0, j1;
      chunk(nc, part.grid_n, in, nr, j0, j1);
      for (long ic = i0; ic < i1; ic += job.blk.mc) {
        const long mc = std::min(job.blk.mc, i1 - ic);
        pack_a(ap, g.a, g.lda, g.ta, ic, mc, pc, kc, mr);
        for (long jr = j0; jr < j1; jr += nr) {
          const long ncols = std::min<long>(nr, j1 - jr);
          const T *bpanel = bp + jr * kc;
          for (long ir = 0; ir < mc; ir += mr) {
            const long nrows = std::min<long>(mr, mc - ir);
            T *c = g.c + (ic + ir) + (jc + jr) * g.ldc;
            if (nrows == mr && ncols == nr) {
              job.kern.ukernel(kc, g.alpha, ap + ir * kc, bpanel, beta, c, g.ldc);
              continue;
            }
            job.kern.ukernel(kc, g.alpha, ap + ir * kc, bpanel, T(0), edge, mr);
            for (long j = 0; j < ncols; ++j)
              for (long i = 0; i < nrows; ++i)
                c[i + j * g.ldc] = edge[i + j * mr] + (beta == T(0) ? T(0) : beta * c[i + j * g.ldc]);
          }
        }
      }
    }
  }
}

template <typename T>
void execute(const GemmArgs<T> &g, const Plan &plan, const KernelInfo<T> &kern) {
  WorkspaceLease ws;
  ws->shape(plan.parts.size(), plan.threads);
  for (size_t i = 0; i < plan.parts.size(); ++i) ws->barriers[i].reset(plan.parts[i].threads);
  const Job<T> job{g, plan, kern, blocking_for(topology(), kern), *ws};
  if (plan.threads == 1) {
    run_thread(job, 0);
    return;
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
  if (short_team) {
    const Plan serial = plan_gemm(topology(), g.m, g.n, g.k, 1, PlanLimits{kern.mr, kern.nr});
    execute(g, serial, kern);
  }
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
    threads = plan.threads;
    execute(g, plan, kern);
  }
  if (verbose) report_gemm(routine, static_cast<char>(g.ta), static_cast<char>(g.tb), g.m, g.n, g.k,
                           double(g.alpha), g.lda, g.ldb, double(g.beta), g.ldc, threads, now_seconds() - t0);
}

template void gemm<float>(const GemmArgs<float> &, const char *);
template void gemm<double>(const GemmArgs<double> &, const char *);

}  // namespace hcops
