/* An application that defines xerbla_ but not cblas_xerbla. With the
 * reference CBLAS, an error that cblas_sgemm/cblas_dgemm find by the Fortran
 * check of the column-major call they run reaches that xerbla_ as the
 * Fortran routine's ("SGEMM", position in that call: M and N, lda and ldb
 * swapped for row major), with CBLAS_CallFromC set and RowMajorStrg set for
 * row major. Errors in the enum arguments go to cblas_xerbla (here the
 * library's own) and never to xerbla_. A direct Fortran call reports with
 * CBLAS_CallFromC clear. Both globals are clear after every call. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cblas.h"
#include "cblas_gemm_call.h"

extern int RowMajorStrg;
extern int CBLAS_CallFromC;

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);

static struct {
  int calls, info, row_major, from_c;
  char name[8];
} got;

void xerbla_(const char *srname, const int *info, size_t len) {
  size_t n = 0;
  (void)len;
  while (n < 6 && srname[n] && srname[n] != ' ') {
    got.name[n] = srname[n];
    ++n;
  }
  got.name[n] = '\0';
  got.info = *info;
  got.row_major = RowMajorStrg;
  got.from_c = CBLAS_CallFromC;
  ++got.calls;
}

typedef struct {
  int layout, ta, tb, m, n, k, lda, ldb, ldc;
  int info; /* expected xerbla_ position, 0 = no xerbla_ call */
} only_case;

#define COL CblasColMajor
#define ROW CblasRowMajor
#define N_ CblasNoTrans
#define T_ CblasTrans

static const only_case cases[] = {
    {COL, N_, N_, -1, 0, 0, 1, 1, 1, 3},
    {ROW, N_, N_, -1, 0, 0, 1, 1, 1, 4},
    {COL, N_, N_, 0, -1, 0, 1, 1, 1, 4},
    {ROW, N_, N_, 0, -1, 0, 1, 1, 1, 3},
    {COL, N_, N_, 0, 0, -1, 1, 1, 1, 5},
    {ROW, N_, N_, 0, 0, -1, 1, 1, 1, 5},
    {COL, N_, N_, 2, 0, 0, 1, 1, 2, 8},  /* lda */
    {ROW, N_, N_, 0, 0, 2, 1, 1, 1, 10}, /* lda, the second matrix of the swapped call */
    {COL, N_, N_, 0, 0, 2, 1, 1, 1, 10}, /* ldb */
    {ROW, N_, N_, 0, 2, 0, 1, 1, 2, 8},  /* ldb, the first matrix of the swapped call */
    {COL, N_, N_, 2, 0, 0, 2, 1, 1, 13}, /* ldc */
    {ROW, T_, T_, 0, 2, 0, 1, 1, 1, 13},
    /* enum errors: cblas_xerbla only (the library's prints them) */
    {0, N_, N_, 0, 0, 0, 1, 1, 1, 0},
    {COL, 0, N_, 0, 0, 0, 1, 1, 1, 0},
    {ROW, N_, 0, 0, 0, 0, 1, 1, 1, 0},
};

static int check(const char *what, int want_info, const char *want_name, int want_row, int want_from_c) {
  int fail = 0;
  if (want_info == 0) {
    fail = got.calls != 0;
  } else {
    fail = got.calls != 1 || got.info != want_info || strcmp(got.name, want_name) != 0 || got.row_major != want_row ||
           got.from_c != want_from_c;
  }
  if (RowMajorStrg || CBLAS_CallFromC) fail = 1;
  if (fail)
    printf(
        "FAIL %s: expected %d xerbla_ call(s) (%s, %d, RowMajorStrg %d, CBLAS_CallFromC %d); got %d (%s, %d, "
        "RowMajorStrg %d, CBLAS_CallFromC %d); after the call RowMajorStrg %d, CBLAS_CallFromC %d\n",
        what, want_info != 0, want_name, want_info, want_row, want_from_c, got.calls, got.name, got.info, got.row_major,
        got.from_c, RowMajorStrg, CBLAS_CallFromC);
  return fail;
}

int main(void) {
  int failures = 0;
  float sa[4] = {0}, sb[4] = {0}, sc[4] = {0};
  char what[160];

  /* The Fortran entry point itself: not from C. */
  const int m = -1, n = 0, k = 0, one = 1;
  const float alpha = 1.0f, beta = 0.0f;
  memset(&got, 0, sizeof got);
  sgemm_("N", "N", &m, &n, &k, &alpha, sa, &one, sb, &one, &beta, sc, &one);
  failures += check("sgemm_(m = -1)", 3, "SGEMM", 0, 0);

  for (int dbl = 0; dbl < 2; ++dbl)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
      const only_case *c = &cases[i];
      memset(&got, 0, sizeof got);
      snprintf(what, sizeof what, "cblas_%cgemm(layout %d, %d, %d, M %d, N %d, K %d, lda %d, ldb %d, ldc %d)",
               dbl ? 'd' : 's', c->layout, c->ta, c->tb, c->m, c->n, c->k, c->lda, c->ldb, c->ldc);
      call_cblas_gemm(dbl, c->layout, c->ta, c->tb, c->m, c->n, c->k, c->lda, c->ldb, c->ldc);
      failures += check(what, c->info, dbl ? "DGEMM" : "SGEMM", c->layout == ROW, 1);
    }
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
