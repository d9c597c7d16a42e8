// The native GEMM as the BLAS and CBLAS layers call it: the engine, timed
// and reported under HCOPS_VERBOSE with the column-major sgemm_ arguments
// (the trace format of shared/workloads, so a user's run can be replayed).
// f32 GEMM (sgemm_, cblas_sgemm) runs in the HCOPS_FP32_MATH mode in effect
// (gemm/fp32_math.h), and its line says which; other datatypes have no mode.
#pragma once

#include <string>
#include <type_traits>

#include "common/fp_env.h"
#include "common/log.h"
#include "gemm/fp32_math.h"
#include "gemm/gemm.h"
#include "shim/common/verbose.h"

namespace hcops {

// The verbose line of one native GEMM (gemm_call.cpp); `math`, when not
// null, is appended to its details (fp32_math_detail()).
// `batches`: products of this shape in the call (the dispatcher's bmm), for the flop rate.
void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda, long ldb,
                 double beta, long ldc, const GemmReport &rep, double seconds, const char *math = nullptr,
                 long batches = 1);

// The <details> field of a GEMM's verbose line: how gemm() ran (`rep`), or
// that C was only scaled; `math` appended when not null.
std::string gemm_details(const GemmReport &rep, bool scaled_only, const char *math);

// gemm() of the ABI layers: f32 in the HCOPS_FP32_MATH mode, others as asked.
template <typename Ty>
GemmReport abi_gemm(const GemmArgs<Ty> &g) {
  if constexpr (std::is_same_v<Ty, Sgemm>) return gemm_fp32(g);
  else return gemm(g);
}

template <typename Ty>
void run_gemm(const char *routine, const GemmArgs<Ty> &g) {
  if (verbose_level() == 0) {
    abi_gemm(g);
    return;
  }
  // The timing and the line are ours: they leave no flag in the caller's
  // environment; the product's own flags stay.
  double t0;
  {
    KeepFpEnv keep;
    t0 = now_seconds();
  }
  const GemmReport rep = abi_gemm(g);
  KeepFpEnv keep;
  const char *math = nullptr;
  if constexpr (std::is_same_v<Ty, Sgemm>) math = fp32_math_detail().c_str();
  report_gemm(routine, static_cast<char>(g.ta), static_cast<char>(g.tb), g.m, g.n, g.k, double(g.alpha), g.lda, g.ldb,
              double(g.beta), g.ldc, rep, now_seconds() - t0, math);
}

}  // namespace hcops
