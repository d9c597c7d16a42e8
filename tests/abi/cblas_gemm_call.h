/* cblas_sgemm or cblas_dgemm with alpha 1 and beta 0 on small scratch
 * operands, layout and transposes passed as plain ints so that invalid
 * values reach the library: the call the error-exit tests make. The operands
 * are never read when the arguments are wrong; valid calls must fit in 64
 * elements (errpos_probe's legal calls are 4x3x5 with small leading
 * dimensions). */
#ifndef HCOPS_TESTS_CBLAS_GEMM_CALL_H
#define HCOPS_TESTS_CBLAS_GEMM_CALL_H

#include "cblas.h"

static inline void call_cblas_gemm(int dbl, int layout, int ta, int tb, int m, int n, int k, int lda, int ldb,
                                   int ldc) {
  static float sa[64], sb[64], sc[64];
  static double da[64], db[64], dc[64];
  if (dbl)
    cblas_dgemm((CBLAS_LAYOUT)layout, (CBLAS_TRANSPOSE)ta, (CBLAS_TRANSPOSE)tb, m, n, k, 1.0, da, lda, db, ldb, 0.0, dc,
                ldc);
  else
    cblas_sgemm((CBLAS_LAYOUT)layout, (CBLAS_TRANSPOSE)ta, (CBLAS_TRANSPOSE)tb, m, n, k, 1.0f, sa, lda, sb, ldb, 0.0f,
                sc, ldc);
}

#endif
