// The CBLAS bf16 GEMMs: OpenBLAS's cblas_sbgemm and Intel MKL's
// cblas_gemm_bf16bf16f32, both C = alpha op(A) op(B) + beta C with A and B
// in bf16 and alpha, beta, C in f32, on the engine's Bf16Gemm.
//
// Each reports a bad argument as its own library does, not as netlib CBLAS
// (shim/cblas/gemm.cpp), because code that calls them was written against
// that library; neither sets CBLAS_CallFromC, so our xerbla_ prints the
// report as given instead of turning it into a cblas_xerbla call.
//  - cblas_sbgemm, from OpenBLAS's interface/gemm.c built with CBLAS and
//    BFLOAT16 (Debian's OpenBLAS has no sbgemm, so this follows the source,
//    not a run): everything goes to xerbla_("SBGEMM ", info, 8), never to
//    cblas_xerbla; info is the Fortran position in the column-major call
//    actually run (for row major: A/B, M/N, lda/ldb and the transposes
//    swapped), found by the Fortran checks (hcops_openblas_gemm_arg_error:
//    no max(1, ...) on the leading dimensions); a bad layout is info 0, as
//    OpenBLAS leaves it. CblasConjNoTrans (114, OpenBLAS's enum) is NoTrans.
//  - cblas_gemm_bf16bf16f32, as MKL documents its xerbla: the routine's
//    own name and the position in its own parameter list (1 layout, 2 and 3
//    the transposes, 4-6 m, n, k, 9 lda, 11 ldb, 14 ldc), whatever the
//    layout, the first bad one in that order; leading dimensions at least
//    max(1, rows as stored), as MKL's page for it states. MKL's page names
//    only CblasNoTrans and CblasTrans; CblasConjTrans is taken as CblasTrans,
//    as by every real CBLAS gemm, rather than refused.
#include <cstring>
#include <utility>

#include "shim/common/blas_abi.h"
#include "cblas.h"
#include "shim/common/gemm_call.h"

namespace {

// 'N'/'T' for the transposes each library accepts; 0 for anything else.
char openblas_trans(CBLAS_TRANSPOSE t) {
  switch (static_cast<int>(t)) {
    case CblasNoTrans:
    case 114: return 'N';  // OpenBLAS's CblasConjNoTrans
    case CblasTrans:
    case CblasConjTrans: return 'T';
    default: return 0;
  }
}
char mkl_trans(CBLAS_TRANSPOSE t) {
  switch (t) {
    case CblasNoTrans: return 'N';
    case CblasTrans:
    case CblasConjTrans: return 'T';
    default: return 0;
  }
}

void run(const char *routine, char ta, char tb, int m, int n, int k, float alpha, const bfloat16 *a, int lda,
         const bfloat16 *b, int ldb, float beta, float *c, int ldc) {
  if (m == 0 || n == 0 || ((alpha == 0.0f || k == 0) && beta == 1.0f)) return;
  auto trans = [](char t) { return t == 'N' ? hcops::Trans::N : hcops::Trans::T; };
  // bfloat16 and hcops::bf16 are both the 16 high bits of a binary32.
  static_assert(sizeof(hcops::bf16) == sizeof(bfloat16), "bf16 layout");
  hcops::run_gemm<hcops::Bf16Gemm>(routine,
                                   {trans(ta), trans(tb), m, n, k, alpha, reinterpret_cast<const hcops::bf16 *>(a), lda,
                                    reinterpret_cast<const hcops::bf16 *>(b), ldb, beta, c, ldc});
}

int max1(int x) { return x > 1 ? x : 1; }

}  // namespace

extern "C" {

void cblas_sbgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE transa, CBLAS_TRANSPOSE transb, const CBLAS_INT m,
                  const CBLAS_INT n, const CBLAS_INT k, const float alpha, const bfloat16 *a, const CBLAS_INT lda,
                  const bfloat16 *b, const CBLAS_INT ldb, const float beta, float *c, const CBLAS_INT ldc) {
  static const char xname[] = "SBGEMM ";
  const bool row = layout == CblasRowMajor;
  if (!row && layout != CblasColMajor) {
    int info = 0;
    xerbla_(xname, &info, sizeof xname);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. A bad
  // transpose stays a character the Fortran check refuses ('?').
  char ta = openblas_trans(transa), tb = openblas_trans(transb);
  ta = ta ? ta : '?';
  tb = tb ? tb : '?';
  int cm = m, cn = n, clda = lda, cldb = ldb;
  const bfloat16 *ca = a, *cb = b;
  if (row) {
    std::swap(ta, tb);
    std::swap(cm, cn);
    std::swap(ca, cb);
    std::swap(clda, cldb);
  }
  if (int info = hcops_openblas_gemm_arg_error(ta, tb, cm, cn, k, clda, cldb, ldc)) {
    xerbla_(xname, &info, sizeof xname);
    return;
  }
  run("cblas_sbgemm", ta, tb, cm, cn, k, alpha, ca, clda, cb, cldb, beta, c, ldc);
}

void cblas_gemm_bf16bf16f32(const CBLAS_LAYOUT layout, const CBLAS_TRANSPOSE transa, const CBLAS_TRANSPOSE transb,
                            const CBLAS_INT m, const CBLAS_INT n, const CBLAS_INT k, const float alpha,
                            const MKL_BF16 *a, const CBLAS_INT lda, const MKL_BF16 *b, const CBLAS_INT ldb,
                            const float beta, float *c, const CBLAS_INT ldc) {
  static const char xname[] = "cblas_gemm_bf16bf16f32";
  const bool row = layout == CblasRowMajor;
  const char ta = mkl_trans(transa), tb = mkl_trans(transb);
  // Rows of A, B and C as stored (columns' length in column major).
  const int rows_a = row ? (ta == 'N' ? k : m) : (ta == 'N' ? m : k);
  const int rows_b = row ? (tb == 'N' ? n : k) : (tb == 'N' ? k : n);
  const int rows_c = row ? n : m;
  int info = 0;
  if (!row && layout != CblasColMajor) info = 1;
  else if (!ta) info = 2;
  else if (!tb) info = 3;
  else if (m < 0) info = 4;
  else if (n < 0) info = 5;
  else if (k < 0) info = 6;
  else if (lda < max1(rows_a)) info = 9;
  else if (ldb < max1(rows_b)) info = 11;
  else if (ldc < max1(rows_c)) info = 14;
  if (info) {
    xerbla_(xname, &info, std::strlen(xname));
    return;
  }
  // MKL_BF16 is an unsigned short, as OpenBLAS's bfloat16 (uint16_t).
  const bfloat16 *ba = a, *bb = b;
  if (row) run("cblas_gemm_bf16bf16f32", tb, ta, n, m, k, alpha, bb, ldb, ba, lda, beta, c, ldc);
  else run("cblas_gemm_bf16bf16f32", ta, tb, m, n, k, alpha, ba, lda, bb, ldb, beta, c, ldc);
}

}  // extern "C"
