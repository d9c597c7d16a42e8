// Runs a batched product planned by make_geometry (gemm/matmul_geometry.h):
// one gemm() per batch left after folding, on the operands as the caller
// holds them. Many small products (attention's batched matmuls: 48 of
// 256x256x64 in a DiT-S/2 block) run one product per thread, each serial
// (gemm() is serial inside a parallel region), rather than one team started
// per product, handed out dynamically; the outputs of different batches
// never overlap. Large ones
// keep the engine's own partition of each product. A header: the OpenMP
// region is compiled into the ABI layer that calls it, on the runtime that
// layer links (PyTorch's own libgomp, for libhcops_torch).
#pragma once

#include <omp.h>

#include <string_view>

#include "gemm/team.h"
#include "common/work_share.h"
#include "gemm/gemm.h"
#include "gemm/matmul_geometry.h"

namespace hcops {

// Batches of at most this many multiply-adds each go one per thread.
constexpr double kSmallProductMacs = double(1 << 24);

// `base`: the GemmArgs of batch 0 (m, n, k, ld*, alpha, beta, epilogue and
// a, b, c at that batch's element (0, 0)); `g` supplies the batch loop.
// The report of the first product that ran kernels (threads: those that
// took part).
template <typename Ty>
GemmReport gemm_batched(const GemmArgs<Ty> &base, const Geometry &g) {
  const long batches = g.batches();
  auto one = [&](long bi) {
    GemmArgs<Ty> args = base;
    long oa = 0, ob = 0, oc = 0;
    for (int d = g.nbatch - 1; d >= 0; --d) {
      const long i = bi % g.bdims[d];
      bi /= g.bdims[d];
      oa += i * g.a_bstride[d];
      ob += i * g.b_bstride[d];
      oc += i * g.c_bstride[d];
    }
    args.a += oa;
    args.b += ob;
    args.c += oc;
    return gemm(args);
  };
  GemmReport report;
  const int threads = allowed_threads();  // share_dynamically fits it to the cores
  const double macs = double(base.m) * double(base.n) * double(base.k);
  if (threads > 1 && batches >= threads && macs <= kSmallProductMacs && !omp_in_parallel()) {
    // Handed out dynamically (common/work_share.h): a thread descheduled on
    // a shared CPU holds up one product, not its share of them.
    const int used = share_dynamically(batches, threads, [&](long bi) {
      const GemmReport rep = one(bi);
      if (bi == 0) report = rep;
    });
    report.threads = used;
    return report;
  }
  for (long bi = 0; bi < batches; ++bi) {
    const GemmReport rep = one(bi);
    if (bi == 0 || std::string_view(report.family) == "none") report = rep;
  }
  return report;
}

}  // namespace hcops
