// The GEMM engine: column-major C = alpha * op(A) * op(B) + beta * C on
// already validated arguments. Knows nothing of Fortran or CBLAS.
#pragma once

namespace hcops {

enum class Trans : char { N = 'N', T = 'T' };

template <typename T>
struct GemmArgs {
  Trans ta, tb;
  long m, n, k;
  T alpha;
  const T *a;
  long lda;
  const T *b;
  long ldb;
  T beta;
  T *c;
  long ldc;
};

// `routine` names the entry point for HCOPS_VERBOSE ("sgemm_", ...).
template <typename T>
void gemm(const GemmArgs<T> &args, const char *routine);

extern template void gemm<float>(const GemmArgs<float> &, const char *);
extern template void gemm<double>(const GemmArgs<double> &, const char *);

}  // namespace hcops
