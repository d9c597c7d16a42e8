// cblas_sgemm / cblas_dgemm. Errors are reported exactly as netlib CBLAS
// reports them, because handlers written for the reference (the CBLAS
// testers', applications') decode them its way:
//  - layout, TransA, TransB: cblas_xerbla(1/2/3, ...) directly, except
//    that netlib reports an illegal TransB in row major as 2 (see below);
//  - everything else: the Fortran check of the column-major call that is
//    run — for CblasRowMajor the swapped one — reported through xerbla_
//    ("SGEMM", Fortran position) with CBLAS_CallFromC set, and RowMajorStrg
//    set in row major. An application's xerbla_ receives exactly that; the
//    library's own xerbla_ turns it into cblas_xerbla(info + 1,
//    "cblas_sgemm", ""), whose handlers swap M/N and lda/ldb back when
//    RowMajorStrg is set.
#include <utility>

#include "shim/common/blas_abi.h"
#include "cblas.h"
#include "shim/common/cblas_state.h"
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

// Sets the reference's globals for the duration of one CBLAS call and
// clears both on every way out, as netlib does.
class CblasCall {
 public:
  CblasCall() {
    RowMajorStrg = 0;
    CBLAS_CallFromC = 1;
  }
  ~CblasCall() {
    CBLAS_CallFromC = 0;
    RowMajorStrg = 0;
  }
  CblasCall(const CblasCall &) = delete;
  CblasCall &operator=(const CblasCall &) = delete;
};

template <typename Ty, typename T = typename Ty::c_type>
void cblas_gemm(const char *routine, const char *xname, CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa,
                CBLAS_TRANSPOSE transb, CBLAS_INT m, CBLAS_INT n, CBLAS_INT k, T alpha, const T *a, CBLAS_INT lda,
                const T *b, CBLAS_INT ldb, T beta, T *c, CBLAS_INT ldc) {
  CblasCall call;
  const bool row = layout == CblasRowMajor;
  if (!row && layout != CblasColMajor) {
    cblas_xerbla(1, routine, "Illegal layout setting, %d\n", static_cast<int>(layout));
    return;
  }
  if (row) RowMajorStrg = 1;
  char ta, tb;
  if (!trans_char(transa, ta)) {
    cblas_xerbla(2, routine, "Illegal TransA setting, %d\n", static_cast<int>(transa));
    return;
  }
  // netlib reports an illegal TransB in row major as parameter 2, not 3 (a
  // slip in its cblas_?gemm.c that its testers never exercise). We report
  // what it does, as the doc promises: a handler written against the
  // reference decodes its numbers; the message still says TransB.
  if (!trans_char(transb, tb)) {
    cblas_xerbla(row ? 2 : 3, routine, "Illegal TransB setting, %d\n", static_cast<int>(transb));
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
    xerbla_(xname, &info, 6);
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
  cblas_gemm<hcops::Sgemm>("cblas_sgemm", "SGEMM ", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                           ldc);
}

void cblas_dgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, const CBLAS_INT m,
                 const CBLAS_INT n, const CBLAS_INT k, const double alpha, const double *a, const CBLAS_INT lda,
                 const double *b, const CBLAS_INT ldb, const double beta, double *c, const CBLAS_INT ldc) {
  cblas_gemm<hcops::Dgemm>("cblas_dgemm", "DGEMM ", layout, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                           ldc);
}

}  // extern "C"
