// The native GEMM as the BLAS and CBLAS layers call it: the engine, timed
// and reported under HCOPS_VERBOSE with the column-major sgemm_ arguments
// (the trace format of shared/workloads, so a user's run can be replayed).
#pragma once

#include "common/fp_env.h"
#include "common/log.h"
#include "gemm/gemm.h"
#include "shim/common/verbose.h"

namespace hcops {

// The verbose line of one native GEMM (gemm_call.cpp).
void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda, long ldb,
                 double beta, long ldc, const GemmReport &rep, double seconds);

template <typename Ty>
void run_gemm(const char *routine, const GemmArgs<Ty> &g) {
  if (verbose_level() == 0) {
    gemm(g);
    return;
  }
  // The timing and the line are ours: they leave no flag in the caller's
  // environment; the product's own flags stay.
  double t0;
  {
    KeepFpEnv keep;
    t0 = now_seconds();
  }
  const GemmReport rep = gemm(g);
  KeepFpEnv keep;
  report_gemm(routine, static_cast<char>(g.ta), static_cast<char>(g.tb), g.m, g.n, g.k, double(g.alpha), g.lda, g.ldb,
              double(g.beta), g.ldc, rep, now_seconds() - t0);
}

}  // namespace hcops
