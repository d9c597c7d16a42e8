// sgemm_ / dgemm_, and OpenBLAS's sbgemm_ (bf16 A and B, f32 alpha, beta
// and C): the Fortran entry points of the native GEMM.
#include "blas_abi.h"
#include "shim/common/gemm_call.h"

namespace {

template <typename Ty, typename T = typename Ty::acc_type>
void fortran_gemm(const char *xname, const char *routine, const char *transa, const char *transb, const int *m,
                  const int *n, const int *k, const T *alpha, const typename Ty::a_type *a, const int *lda,
                  const typename Ty::b_type *b, const int *ldb, const T *beta, typename Ty::c_type *c,
                  const int *ldc) {
  int info = hcops_gemm_arg_error(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc);
  if (info) {
    xerbla_(xname, &info, 6);
    return;
  }
  if (*m == 0 || *n == 0 || ((*alpha == T(0) || *k == 0) && *beta == T(1))) return;
  auto trans = [](char t) { return (t == 'N' || t == 'n') ? hcops::Trans::N : hcops::Trans::T; };
  hcops::run_gemm<Ty>(routine, {trans(*transa), trans(*transb), *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc});
}

}  // namespace

extern "C" {

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
            const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
            const int *ldc) {
  fortran_gemm<hcops::Sgemm>("SGEMM ", "sgemm_", transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc) {
  fortran_gemm<hcops::Dgemm>("DGEMM ", "dgemm_", transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// OpenBLAS's bfloat16 is an unsigned short holding the high half of a float.
void sbgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
             const hcops::bf16 *a, const int *lda, const hcops::bf16 *b, const int *ldb, const float *beta, float *c,
             const int *ldc) {
  fortran_gemm<hcops::Bf16Gemm>("SBGEMM ", "sbgemm_", transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
