/* Argument errors of the bf16 GEMM ABIs, reported as their reference
 * libraries report them, to this application's own xerbla_ and
 * cblas_xerbla (which take precedence over the library's and record):
 *  - sbgemm_ and cblas_sbgemm as OpenBLAS's interface/gemm.c: xerbla_
 *    ("SBGEMM ", length 8) with the Fortran position of the column-major call
 *    run (row major: A/B, M/N, lda/ldb, the transposes swapped); a bad layout
 *    is info 0; no max(1, ...) on leading dimensions; never cblas_xerbla;
 *  - cblas_gemm_bf16bf16f32 as MKL documents its xerbla: the routine's name
 *    and the position in its own parameter list, in either layout.
 * Each bad call must leave C, A and B untouched and the CBLAS globals 0.
 * (Debian's OpenBLAS has no sbgemm and MKL is not here: the expectations
 * are read from OpenBLAS's source and MKL's documentation, see
 * shim/cblas/gemm_bf16.cpp.) */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cblas/cblas.h>

void sbgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
             const bfloat16 *a, const int *lda, const bfloat16 *b, const int *ldb, const float *beta, float *c,
             const int *ldc);

extern int RowMajorStrg, CBLAS_CallFromC;

static struct {
  int xerbla_calls, cblas_calls;
  char name[40];
  size_t len;
  int info;
} got;

void xerbla_(const char *srname, const int *info, size_t len) {
  size_t n = len < sizeof got.name - 1 ? len : sizeof got.name - 1;
  memcpy(got.name, srname, n);
  got.name[n] = '\0';
  got.len = len;
  got.info = *info;
  ++got.xerbla_calls;
}

void cblas_xerbla(int p, const char *rout, const char *form, ...) {
  (void)form;
  snprintf(got.name, sizeof got.name, "%s", rout);
  got.info = p;
  ++got.cblas_calls;
}

typedef enum { F77, SB_COL, SB_ROW, MKL_COL, MKL_ROW, SB_BADLAYOUT, MKL_BADLAYOUT } api_t;
typedef struct {
  api_t api;
  int ta, tb, m, n, k, lda, ldb, ldc;
  int want; /* the info reported; -1: a valid call, no report */
} xcase;

static int passed, failed;

#define ARENA 4096
static bfloat16 a[ARENA], b[ARENA];
static float c[ARENA], c0[ARENA];

static void run(const xcase *x) {
  for (int i = 0; i < ARENA; ++i) {
    a[i] = (bfloat16)(0x3f80 + i % 7);
    b[i] = (bfloat16)(0x4000 + i % 5);
    c[i] = c0[i] = (float)(i % 11);
  }
  memset(&got, 0, sizeof got);
  const float alpha = 1, beta = 0.5f;
  const char ta = (char)x->ta, tb = (char)x->tb;
  const char *want_name = "SBGEMM ";
  size_t want_len = 8;
  switch (x->api) {
    case F77: sbgemm_(&ta, &tb, &x->m, &x->n, &x->k, &alpha, a, &x->lda, b, &x->ldb, &beta, c, &x->ldc); break;
    case SB_COL:
    case SB_ROW:
    case SB_BADLAYOUT:
      cblas_sbgemm(x->api == SB_COL ? CblasColMajor : x->api == SB_ROW ? CblasRowMajor : (CBLAS_LAYOUT)100,
                   (CBLAS_TRANSPOSE)x->ta, (CBLAS_TRANSPOSE)x->tb, x->m, x->n, x->k, alpha, a, x->lda, b, x->ldb, beta,
                   c, x->ldc);
      break;
    default:
      want_name = "cblas_gemm_bf16bf16f32";
      want_len = strlen(want_name);
      cblas_gemm_bf16bf16f32(x->api == MKL_COL   ? CblasColMajor
                             : x->api == MKL_ROW ? CblasRowMajor
                                                 : (CBLAS_LAYOUT)0,
                             (CBLAS_TRANSPOSE)x->ta, (CBLAS_TRANSPOSE)x->tb, x->m, x->n, x->k, alpha, a, x->lda, b,
                             x->ldb, beta, c, x->ldc);
  }
  static const char *const apis[] = {"sbgemm_",        "cblas_sbgemm Col",  "cblas_sbgemm Row",
                                     "mkl Col",        "mkl Row",           "cblas_sbgemm layout 100",
                                     "mkl layout 0"};
  char desc[160];
  snprintf(desc, sizeof desc, "%s(ta=%d tb=%d m=%d n=%d k=%d lda=%d ldb=%d ldc=%d)", apis[x->api], x->ta, x->tb, x->m,
           x->n, x->k, x->lda, x->ldb, x->ldc);
  int ok = 1;
  if (x->want < 0) {
    if (got.xerbla_calls || got.cblas_calls) {
      printf("FAIL %s: a valid call reported (\"%s\", %d)\n", desc, got.name, got.info);
      ok = 0;
    }
  } else {
    if (got.cblas_calls || got.xerbla_calls != 1 || got.info != x->want || got.len != want_len ||
        strcmp(got.name, want_name) != 0) {
      printf("FAIL %s: want one xerbla_(\"%s\", %d, len %zu); got %d xerbla_ and %d cblas_xerbla call(s), last "
             "(\"%s\", %d, len %zu)\n",
             desc, want_name, x->want, want_len, got.xerbla_calls, got.cblas_calls, got.name, got.info, got.len);
      ok = 0;
    }
    if (memcmp(c, c0, sizeof c)) {
      printf("FAIL %s: C written despite the error\n", desc);
      ok = 0;
    }
  }
  if (RowMajorStrg || CBLAS_CallFromC) {
    printf("FAIL %s: RowMajorStrg %d, CBLAS_CallFromC %d after the call\n", desc, RowMajorStrg, CBLAS_CallFromC);
    ok = 0;
  }
  if (ok) ++passed;
  else ++failed;
}

int main(void) {
  const int N = CblasNoTrans, T = CblasTrans;
  const xcase cases[] = {
      /* sbgemm_: OpenBLAS's Fortran checks. */
      {F77, 'X', 'N', 2, 3, 4, 2, 4, 2, 1},
      {F77, 'N', 'x', 2, 3, 4, 2, 4, 2, 2},
      {F77, 'X', 'x', -1, 3, 4, 2, 4, 2, 1}, /* the first bad one wins */
      {F77, 'N', 'N', -1, 3, 4, 2, 4, 2, 3},
      {F77, 'N', 'N', 2, -1, 4, 2, 4, 2, 4},
      {F77, 'N', 'N', 2, 3, -1, 2, 4, 2, 5},
      {F77, 'N', 'N', 2, 3, 4, 1, 4, 2, 8},
      {F77, 'T', 'N', 2, 3, 4, 3, 4, 2, 8},
      {F77, 'N', 'N', 2, 3, 4, 2, 3, 2, 10},
      {F77, 'N', 'T', 2, 3, 4, 2, 2, 2, 10},
      {F77, 'N', 'N', 2, 3, 4, 2, 4, 1, 13},
      {F77, 'N', 'N', 2, 3, 4, 1, 3, 1, 8},
      {F77, 'R', 'C', 2, 3, 4, 2, 3, 2, -1}, /* 'R' is N, 'C' is T for OpenBLAS */
      {F77, 'N', 'N', 0, 3, 4, 0, 4, 0, -1}, /* no max(1, ...) in OpenBLAS */
      {F77, 'N', 'N', 0, 0, 0, 0, 0, 0, -1},
      /* cblas_sbgemm column major: the same positions. */
      {SB_COL, 99, N, 2, 3, 4, 2, 4, 2, 1},
      {SB_COL, N, 99, 2, 3, 4, 2, 4, 2, 2},
      {SB_COL, N, N, -1, 3, 4, 2, 4, 2, 3},
      {SB_COL, N, N, 2, -1, 4, 2, 4, 2, 4},
      {SB_COL, N, N, 2, 3, -1, 2, 4, 2, 5},
      {SB_COL, N, N, 2, 3, 4, 1, 4, 2, 8},
      {SB_COL, N, N, 2, 3, 4, 2, 3, 2, 10},
      {SB_COL, N, N, 2, 3, 4, 2, 4, 1, 13},
      {SB_COL, 114, CblasConjTrans, 2, 3, 4, 2, 3, 2, -1},
      {SB_COL, N, N, 0, 3, 4, 0, 4, 0, -1},
      /* row major: the positions of the swapped column-major call. */
      {SB_ROW, 99, N, 2, 3, 4, 4, 3, 3, 2},
      {SB_ROW, N, 99, 2, 3, 4, 4, 3, 3, 1},
      {SB_ROW, N, N, -1, 3, 4, 4, 3, 3, 4},
      {SB_ROW, N, N, 2, -1, 4, 4, 3, 3, 3},
      {SB_ROW, N, N, 2, 3, -1, 4, 3, 3, 5},
      {SB_ROW, N, N, 2, 3, 4, 3, 3, 3, 10}, /* lda (k = 4 per row of A) */
      {SB_ROW, N, N, 2, 3, 4, 4, 2, 3, 8},  /* ldb (n = 3 per row of B) */
      {SB_ROW, T, N, 2, 3, 4, 1, 3, 3, 10}, /* A^T stored k x m: rows of m = 2 */
      {SB_ROW, N, N, 2, 3, 4, 4, 3, 2, 13},
      {SB_ROW, N, N, -1, -1, 4, 4, 3, 3, 3}, /* swapped: N (as m) first */
      {SB_ROW, N, N, 2, 0, 4, 4, 0, 0, -1},
      {SB_BADLAYOUT, N, N, 2, 3, 4, 2, 4, 2, 0},
      {SB_BADLAYOUT, 99, 99, -1, -1, -1, 0, 0, 0, 0},
      /* cblas_gemm_bf16bf16f32: its own positions, either layout. */
      {MKL_BADLAYOUT, N, N, 2, 3, 4, 2, 4, 2, 1},
      {MKL_COL, 99, N, 2, 3, 4, 2, 4, 2, 2},
      {MKL_COL, 114, N, 2, 3, 4, 2, 4, 2, 2}, /* no CblasConjNoTrans in MKL */
      {MKL_COL, N, 99, 2, 3, 4, 2, 4, 2, 3},
      {MKL_COL, N, N, -1, 3, 4, 2, 4, 2, 4},
      {MKL_COL, N, N, 2, -1, 4, 2, 4, 2, 5},
      {MKL_COL, N, N, 2, 3, -1, 2, 4, 2, 6},
      {MKL_COL, N, N, 2, 3, 4, 1, 4, 2, 9},
      {MKL_COL, T, N, 2, 3, 4, 3, 4, 2, 9},
      {MKL_COL, N, N, 2, 3, 4, 2, 3, 2, 11},
      {MKL_COL, N, T, 2, 3, 4, 2, 2, 2, 11},
      {MKL_COL, N, N, 2, 3, 4, 2, 4, 1, 14},
      {MKL_COL, N, N, 0, 3, 4, 0, 4, 1, 9}, /* max(1, m) */
      {MKL_COL, N, N, 0, 3, 4, 1, 4, 1, -1},
      {MKL_COL, CblasConjTrans, N, 2, 3, 4, 4, 4, 2, -1},
      {MKL_ROW, 99, N, 2, 3, 4, 4, 3, 3, 2},
      {MKL_ROW, N, 99, 2, 3, 4, 4, 3, 3, 3},
      {MKL_ROW, N, N, -1, 3, 4, 4, 3, 3, 4},
      {MKL_ROW, N, N, 2, -1, 4, 4, 3, 3, 5},
      {MKL_ROW, N, N, -1, -1, 4, 4, 3, 3, 4}, /* M before N, whatever the layout */
      {MKL_ROW, N, N, 2, 3, -1, 4, 3, 3, 6},
      {MKL_ROW, N, N, 2, 3, 4, 3, 3, 3, 9},
      {MKL_ROW, T, N, 2, 3, 4, 1, 3, 3, 9},
      {MKL_ROW, N, N, 2, 3, 4, 4, 2, 3, 11},
      {MKL_ROW, N, T, 2, 3, 4, 4, 3, 3, 11},
      {MKL_ROW, N, N, 2, 3, 4, 4, 3, 2, 14},
      {MKL_ROW, N, N, 2, 3, 4, 3, 2, 2, 9}, /* the first bad one wins */
      {MKL_ROW, N, N, 2, 3, 4, 4, 3, 3, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) run(&cases[i]);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
