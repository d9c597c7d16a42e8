// sgemm_ / dgemm_, and OpenBLAS's sbgemm_ (bf16 A and B, f32 alpha, beta
// and C): the Fortran entry points of the native GEMM.
//
// sgemm_ and dgemm_ check their arguments as the reference BLAS does.
// sbgemm_ exists only in OpenBLAS, so it checks and reports as OpenBLAS's
// interface/gemm.c does (Debian's OpenBLAS is built without it, so this
// follows the source, not a run): the same positions and order, but 'R'/'C'
// also accepted and no max(1, ...) on the leading dimensions (gemm_args.c),
// and xerbla_("SBGEMM ", info) with the length OpenBLAS passes,
// sizeof("SBGEMM ") = 8. Its quick returns are OpenBLAS's (m or n zero)
// plus ours for alpha or k zero with beta one, which leave C as it is.
#include "shim/common/blas_abi.h"
#include "shim/common/gemm_call.h"

namespace {

using ArgCheck = int (*)(char, char, int, int, int, int, int, int);

template <typename Ty, typename T = typename Ty::acc_type>
void fortran_gemm(ArgCheck check, const char *xname, size_t xname_len, const char *routine, const char *transa,
                  const char *transb, const int *m, const int *n, const int *k, const T *alpha,
                  const typename Ty::a_type *a, const int *lda, const typename Ty::b_type *b, const int *ldb,
                  const T *beta, typename Ty::c_type *c, const int *ldc) {
  int info = check(*transa, *transb, *m, *n, *k, *lda, *ldb, *ldc);
  if (info) {
    xerbla_(xname, &info, xname_len);
    return;
  }
  if (*m == 0 || *n == 0 || ((*alpha == T(0) || *k == 0) && *beta == T(1))) return;
  // 'R' (OpenBLAS only: conjugate, no transpose) is 'N' for real data.
  auto trans = [](char t) {
    return (t == 'N' || t == 'n' || t == 'R' || t == 'r') ? hcops::Trans::N : hcops::Trans::T;
  };
  hcops::run_gemm<Ty>(routine, {trans(*transa), trans(*transb), *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc});
}

}  // namespace

extern "C" {

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
            const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
            const int *ldc) {
  fortran_gemm<hcops::Sgemm>(hcops_gemm_arg_error, "SGEMM ", 6, "sgemm_", transa, transb, m, n, k, alpha, a, lda, b,
                             ldb, beta, c, ldc);
}

void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc) {
  fortran_gemm<hcops::Dgemm>(hcops_gemm_arg_error, "DGEMM ", 6, "dgemm_", transa, transb, m, n, k, alpha, a, lda, b,
                             ldb, beta, c, ldc);
}

// OpenBLAS's bfloat16 is an unsigned short holding the high half of a float.
void sbgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
             const hcops::bf16 *a, const int *lda, const hcops::bf16 *b, const int *ldb, const float *beta, float *c,
             const int *ldc) {
  fortran_gemm<hcops::Bf16Gemm>(hcops_openblas_gemm_arg_error, "SBGEMM ", sizeof "SBGEMM ", "sbgemm_", transa, transb,
                                m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
