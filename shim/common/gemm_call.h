// The native GEMM as the BLAS and CBLAS layers call it: the engine, timed
// and reported under HCOPS_VERBOSE with the column-major sgemm_ arguments
// (the trace format of perf/workloads, so a user's run can be replayed).
// f32 GEMM runs in the engine's HCOPS_FP32_MATH mode (gemm/fp32_math.h),
// and its line says which (GemmReport::math).
#pragma once

#include <string>
#include <type_traits>

#include "common/fp_env.h"
#include "common/log.h"
#include "gemm/gemm.h"
#include "shim/common/verbose.h"

namespace hcops {

// The verbose line of one native GEMM (gemm_call.cpp); `extra`, when not
// null, is added to its details (the caller's own: "api=aten batches=8").
// `batches`: products of this shape in the call (the dispatcher's bmm), for the flop rate.
void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda, long ldb,
                 double beta, long ldc, const GemmReport &rep, double seconds, const char *extra = nullptr,
                 long batches = 1);

// The <details> field of a GEMM's verbose line: how gemm() ran (`rep`), or
// that C was only scaled; then `extra` when not null, and f32's mode.
std::string gemm_details(const GemmReport &rep, bool scaled_only, const char *extra = nullptr);

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
