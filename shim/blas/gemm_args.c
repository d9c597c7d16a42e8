#include "shim/common/blas_abi.h"

static int is_trans(char t) { return t == 'T' || t == 't' || t == 'C' || t == 'c'; }
static int is_notrans(char t) { return t == 'N' || t == 'n'; }
static int max1(int x) { return x > 1 ? x : 1; }

int hcops_gemm_arg_error(char transa, char transb, int m, int n, int k, int lda, int ldb, int ldc) {
  const int nrowa = is_notrans(transa) ? m : k;
  const int nrowb = is_notrans(transb) ? k : n;
  if (!is_notrans(transa) && !is_trans(transa)) return 1;
  if (!is_notrans(transb) && !is_trans(transb)) return 2;
  if (m < 0) return 3;
  if (n < 0) return 4;
  if (k < 0) return 5;
  if (lda < max1(nrowa)) return 8;
  if (ldb < max1(nrowb)) return 10;
  if (ldc < max1(m)) return 13;
  return 0;
}

/* OpenBLAS's checks of ?GEMM (its interface/gemm.c), which its sbgemm_ and
 * cblas_sbgemm use: the reference's positions, taken in the same order (the
 * first bad argument wins), but 'R' and 'C' also pass as transposes (for
 * real data 'R', conjugate without transpose, is 'N'), and each leading
 * dimension is only compared with the rows it holds, without the
 * reference's max(1, ...): lda = 0 passes when op(A) has no rows. */
static int openblas_trans(char t) {
  switch (t) {
    case 'N': case 'n': case 'R': case 'r': return 0;
    case 'T': case 't': case 'C': case 'c': return 1;
    default: return -1;
  }
}

int hcops_openblas_gemm_arg_error(char transa, char transb, int m, int n, int k, int lda, int ldb, int ldc) {
  const int ta = openblas_trans(transa), tb = openblas_trans(transb);
  if (ta < 0) return 1;
  if (tb < 0) return 2;
  if (m < 0) return 3;
  if (n < 0) return 4;
  if (k < 0) return 5;
  if (lda < (ta ? k : m)) return 8;
  if (ldb < (tb ? n : k)) return 10;
  if (ldc < m) return 13;
  return 0;
}
