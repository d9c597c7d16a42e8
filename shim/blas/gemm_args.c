#include "blas_abi.h"

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
