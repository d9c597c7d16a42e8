// cblas_sgemm / cblas_dgemm. Errors are reported as the netlib CBLAS reports
// them: enum errors by CBLAS position, the rest as the Fortran check on the
// column-major equivalent call, shifted by the layout argument and, for row
// major, with the swapped M/N and lda/ldb positions mapped back.
#include <utility>

#include "../blas/blas_abi.h"
#include "cblas.h"
#include "shim/common/gemm_call.h"

namespace {

bool trans_char(CBLAS_TRANSPOSE t, char &c) {
  switch (t) {
    case CblasNoTrans: c = 'N'; return true;
    case CblasTrans: c = 'T'; return true;
    case CblasConjTrans: c = 'C'; return true;
    default: return false;
  }
}

int cblas_position(int fortran_info, bool row_major) {
  int p = fortran_info + 1;
  if (row_major) {
    if (p == 4) p = 5;
    else if (p == 5) p = 4;
    else if (p == 9) p = 11;
    else if (p == 11) p = 9;
  }
  return p;
}

template <typename Ty, typename T = typename Ty::c_type>
void cblas_gemm(const char *routine, CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, CBLAS_INT m,
                CBLAS_INT n, CBLAS_INT k, T alpha, const T *a, CBLAS_INT lda, const T *b, CBLAS_INT ldb, T beta, T *c,
                CBLAS_INT ldc) {
  const bool row = layout == CblasRowMajor;
  if (!row && layout != CblasColMajor) {
    cblas_xerbla(1, routine, "Illegal layout setting, %d\n", static_cast<int>(layout));
    return;
  }
  char ta, tb;
  if (!trans_char(transa, ta)) {
    cblas_xerbla(2, routine, "Illegal TransA setting, %d\n", static_cast<int>(transa));
    return;
  }
  if (!trans_char(transb, tb)) {
    cblas_xerbla(3, routine, "Illegal TransB setting, %d\n", static_cast<int>(transb));
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  if (row) {
    std::swap(ta, tb);
    std::swap(m, n);
    std::swap(a, b);
    std::swap(lda, ldb);
  }
  if (int info = hcops_gemm_arg_error(ta, tb, m, n, k, lda, ldb, ldc)) {
    cblas_xerbla(cblas_position(info, row), routine, "");
    return;
  }
  if (m == 0 || n == 0 || ((alpha == T(0) || k == 0) && beta == T(1))) return;
  auto trans = [](char t) { return t == 'N' ? hcops::Trans::N : hcops::Trans::T; };
  hcops::run_gemm<Ty>(routine, {trans(ta), trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
}

}  // namespace

extern "C" {

void cblas_sgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, const CBLAS_INT m,
                 const CBLAS_INT n, const CBLAS_INT k, const float alpha, const float *a, const CBLAS_INT lda,
                 const float *b, const CBLAS_INT ldb, const float beta, float *c, const CBLAS_INT ldc) {
  cblas_gemm<hcops::Sgemm>("cblas_sgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_dgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, const CBLAS_INT m,
                 const CBLAS_INT n, const CBLAS_INT k, const double alpha, const double *a, const CBLAS_INT lda,
                 const double *b, const CBLAS_INT ldb, const double beta, double *c, const CBLAS_INT ldc) {
  cblas_gemm<hcops::Dgemm>("cblas_dgemm", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
