// benchdnn's reference for the inner product (ip/ref_ip.cpp, through gemm()
// in common.cpp) calls dnnl_sgemm. Under HCOps that is HCOps's own GEMM,
// which would then judge the inner products it computed itself, a mistake in
// it hiding in both. benchdnn.mk compiles common.cpp with dnnl_sgemm renamed
// to this plain loop, which is neither libdnnl's nor HCOps's: the reference
// stays independent of what is tested. It computes dnnl_sgemm's row-major
// C = alpha op(A) op(B) + beta C, summing in double (benchdnn's data are small
// integers whose f32 sums are exact, so the result is the same as a float
// GEMM's; the order does not matter).
#include "oneapi/dnnl/dnnl_types.h"

extern "C" dnnl_status_t hcops_benchdnn_reference_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N,
                                                         dnnl_dim_t K, float alpha, const float *A, dnnl_dim_t lda,
                                                         const float *B, dnnl_dim_t ldb, float beta, float *C,
                                                         dnnl_dim_t ldc) {
  const bool ta = transa == 'T' || transa == 't', tb = transb == 'T' || transb == 't';
#pragma omp parallel for schedule(static)
  for (dnnl_dim_t i = 0; i < M; ++i) {
    for (dnnl_dim_t j = 0; j < N; ++j) {
      double sum = 0;
      for (dnnl_dim_t k = 0; k < K; ++k)
        sum += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
      float &c = C[i * ldc + j];
      // beta = 0 overwrites C without reading it, as dnnl_sgemm does.
      c = beta == 0 ? float(alpha * sum) : float(alpha * sum + double(beta) * c);
    }
  }
  return dnnl_success;
}
