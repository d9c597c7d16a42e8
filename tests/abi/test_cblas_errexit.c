/* The error-exit checks of the reference (netlib) CBLAS level-3 tester for
 * cblas_sgemm and cblas_dgemm, with handlers written the way the tester's
 * (and netlib's default) are, against the reference's contract:
 *
 *  - before each call the test says which argument is bad by its position
 *    in the CBLAS call as written, and sets RowMajorStrg for a row-major call
 *    (the library clears and sets it itself; the tester does both);
 *  - layout/TransA/TransB errors arrive at cblas_xerbla directly; the others
 *    at xerbla_ ("SGEMM", position in the Fortran call actually run), which
 *    passes them on as cblas_xerbla(info + 1, "cblas_sgemm", "");
 *  - cblas_xerbla swaps M/N and lda/ldb back when RowMajorStrg is set, so a
 *    library that reports the caller's positions itself is caught twice
 *    swapped ("INFO = 5 INSTEAD OF 4").
 * After every call both netlib globals must be clear again. */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cblas.h"
#include "cblas_gemm_call.h"

extern int RowMajorStrg;
extern int CBLAS_CallFromC;

static int expect_info;         /* the position the handler must end up with */
static const char *expect_rout; /* "cblas_sgemm" / "cblas_dgemm" */
static int handler_calls;
static int failures;

void cblas_xerbla(CBLAS_INT info, const char *rout, const char *form, ...) {
  (void)form;
  ++handler_calls;
  if (strcmp(rout, expect_rout) != 0) {
    printf("***** XERBLA WAS CALLED WITH SRNAME = <%s> INSTEAD OF <%s> *******\n", rout, expect_rout);
    ++failures;
  }
  /* The reported positions are those of the swapped column-major call. */
  if (RowMajorStrg && strstr(rout, "gemm")) {
    if (info == 4) info = 5;
    else if (info == 5) info = 4;
    else if (info == 9) info = 11;
    else if (info == 11) info = 9;
  }
  if (info != expect_info) {
    printf("***** XERBLA WAS CALLED WITH INFO = %d INSTEAD OF %d in %s *******\n", (int)info, expect_info, rout);
    ++failures;
  }
}

/* The Fortran routine's report, turned into the CBLAS routine's: one more
 * argument in front, name "cblas_" + the routine's in lower case. */
void xerbla_(const char *srname, const int *info, size_t len) {
  char rout[16] = "cblas_";
  size_t n = 0;
  (void)len;
  while (n < 6 && srname[n] && srname[n] != ' ') {
    rout[6 + n] = (char)tolower((unsigned char)srname[n]);
    ++n;
  }
  rout[6 + n] = '\0';
  cblas_xerbla(*info + 1, rout, "");
}

typedef struct {
  int layout, ta, tb, m, n, k, lda, ldb, ldc;
  int info; /* position of the bad argument in the CBLAS call */
} errexit;

enum { BAD = -1, BADENUM = 0 };
#define COL CblasColMajor
#define ROW CblasRowMajor
#define N_ CblasNoTrans
#define T_ CblasTrans

/* The tester's shapes: everything else zero-sized and legal, so that only
 * the one argument is wrong. */
static const errexit cases[] = {
    {BADENUM, N_, N_, 0, 0, 0, 1, 1, 1, 1},
    {BADENUM, N_, T_, 0, 0, 0, 1, 1, 1, 1},
    {COL, BADENUM, N_, 0, 0, 0, 1, 1, 1, 2},
    {COL, BADENUM, T_, 0, 0, 0, 1, 1, 1, 2},
    {COL, N_, BADENUM, 0, 0, 0, 1, 1, 1, 3},
    {COL, T_, BADENUM, 0, 0, 0, 1, 1, 1, 3},
    {ROW, BADENUM, N_, 0, 0, 0, 1, 1, 1, 2},
    {ROW, BADENUM, T_, 0, 0, 0, 1, 1, 1, 2},
    /* column major */
    {COL, N_, N_, BAD, 0, 0, 1, 1, 1, 4},
    {COL, T_, T_, BAD, 0, 0, 1, 1, 1, 4},
    {COL, N_, N_, 0, BAD, 0, 1, 1, 1, 5},
    {COL, T_, N_, 0, BAD, 0, 1, 1, 1, 5},
    {COL, N_, N_, 0, 0, BAD, 1, 1, 1, 6},
    {COL, N_, T_, 0, 0, BAD, 1, 1, 1, 6},
    {COL, N_, N_, 2, 0, 0, 1, 1, 2, 9}, /* lda < M */
    {COL, N_, T_, 2, 0, 0, 1, 1, 2, 9},
    {COL, T_, N_, 0, 0, 2, 1, 2, 1, 9}, /* lda < K */
    {COL, T_, T_, 0, 0, 2, 1, 1, 1, 9},
    {COL, N_, N_, 0, 0, 2, 1, 1, 1, 11}, /* ldb < K */
    {COL, T_, N_, 0, 0, 2, 2, 1, 1, 11},
    {COL, N_, T_, 0, 2, 0, 1, 1, 1, 11}, /* ldb < N */
    {COL, T_, T_, 0, 2, 0, 1, 1, 1, 11},
    {COL, N_, N_, 2, 0, 0, 2, 1, 1, 14}, /* ldc < M */
    {COL, T_, T_, 2, 0, 0, 1, 1, 1, 14},
    /* row major: same positions as written by the caller */
    {ROW, N_, N_, BAD, 0, 0, 1, 1, 1, 4},
    {ROW, T_, T_, BAD, 0, 0, 1, 1, 1, 4},
    {ROW, N_, N_, 0, BAD, 0, 1, 1, 1, 5},
    {ROW, T_, N_, 0, BAD, 0, 1, 1, 1, 5},
    {ROW, N_, N_, 0, 0, BAD, 1, 1, 1, 6},
    {ROW, N_, T_, 0, 0, BAD, 1, 1, 1, 6},
    {ROW, N_, N_, 0, 0, 2, 1, 1, 1, 9}, /* lda < K */
    {ROW, N_, T_, 0, 0, 2, 1, 2, 1, 9},
    {ROW, T_, N_, 2, 0, 0, 1, 1, 1, 9}, /* lda < M */
    {ROW, T_, T_, 2, 0, 0, 1, 1, 1, 9},
    {ROW, N_, N_, 0, 2, 0, 1, 1, 2, 11}, /* ldb < N */
    {ROW, T_, N_, 0, 2, 0, 1, 1, 2, 11},
    {ROW, N_, T_, 0, 0, 2, 2, 1, 1, 11}, /* ldb < K */
    {ROW, T_, T_, 0, 0, 2, 1, 1, 1, 11},
    {ROW, N_, N_, 0, 2, 0, 1, 2, 1, 14}, /* ldc < N */
    {ROW, T_, T_, 0, 2, 0, 1, 1, 1, 14},
};

static void run(const errexit *e, int dbl) {
  expect_rout = dbl ? "cblas_dgemm" : "cblas_sgemm";
  expect_info = e->info;
  handler_calls = 0;
  RowMajorStrg = e->layout == ROW; /* as the tester does before each call */
  call_cblas_gemm(dbl, e->layout, e->ta, e->tb, e->m, e->n, e->k, e->lda, e->ldb, e->ldc);
  if (handler_calls != 1) {
    printf("***** ILLEGAL VALUE OF PARAMETER NUMBER %d %s BY %s (%d handler calls) *****\n", e->info,
           handler_calls ? "REPORTED MORE THAN ONCE" : "NOT DETECTED", expect_rout, handler_calls);
    ++failures;
  }
  if (RowMajorStrg || CBLAS_CallFromC) {
    printf("***** %s RETURNED WITH RowMajorStrg = %d, CBLAS_CallFromC = %d *****\n", expect_rout, RowMajorStrg,
           CBLAS_CallFromC);
    ++failures;
  }
}

int main(void) {
  for (int dbl = 0; dbl < 2; ++dbl)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) run(&cases[i], dbl);
  printf("%s: %zu error exits each, %d failure(s)\n", failures ? "FAIL" : "PASS", sizeof cases / sizeof *cases,
         failures);
  return failures ? 1 : 0;
}
