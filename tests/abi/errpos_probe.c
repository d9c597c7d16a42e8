/* Every bad argument of every BLAS/CBLAS routine HCOps runs natively
 * (sgemm_, dgemm_, cblas_sgemm, cblas_dgemm), alone, in both CBLAS layouts,
 * and the first-wins order when several are bad; for each call one line
 * saying exactly what reached the application's error handlers: which one,
 * with which routine name and position, and netlib CBLAS's two globals at
 * that moment and after the call.
 *
 * The program is built twice, linked once with netlib's reference BLAS
 * (Debian's libblas.so.3, which carries CBLAS) and once with libhcops;
 * test_errpos_netlib.sh requires the two outputs to be identical, so the
 * reference itself is the expectation. The handlers only record: netlib's
 * own would end the process.
 *
 * Built with -DPROBE_CBLAS_XERBLA_ONLY the program defines no xerbla_: the
 * Fortran checks of a CBLAS call then reach cblas_xerbla through the
 * library's own xerbla_ (info + 1, "cblas_<routine>"), and a Fortran call's
 * report goes to the library's default message (not recorded). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cblas_gemm_call.h"
#include "cblas.h"

extern int RowMajorStrg;
extern int CBLAS_CallFromC;

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *);

static char reports[512];

static void record(const char *what) {
  size_t used = strlen(reports);
  snprintf(reports + used, sizeof reports - used, "%s%s", used ? " " : "", what);
}

#ifndef PROBE_CBLAS_XERBLA_ONLY
void xerbla_(const char *srname, const int *info, size_t len) {
  char line[96];
  size_t n = 0;
  (void)len; /* C callers pass none; the name is blank-padded to 6 */
  while (n < 6 && srname[n]) ++n;
  snprintf(line, sizeof line, "xerbla_(\"%.*s\", %d; RowMajorStrg=%d CBLAS_CallFromC=%d)", (int)n, srname, *info,
           RowMajorStrg, CBLAS_CallFromC);
  record(line);
}
#endif

void cblas_xerbla(CBLAS_INT p, const char *rout, const char *form, ...) {
  char line[160];
  snprintf(line, sizeof line, "cblas_xerbla(%d, \"%s\", \"%s\"; RowMajorStrg=%d CBLAS_CallFromC=%d)", (int)p, rout,
           form, RowMajorStrg, CBLAS_CallFromC);
  /* the format's newline would split the line */
  for (char *c = line; *c; ++c)
    if (*c == '\n') *c = '|';
  record(line);
}

static float sa[64], sb[64], sc[64];
static double da[64], db[64], dc[64];

static void fortran(int dbl, char ta, char tb, int m, int n, int k, int lda, int ldb, int ldc) {
  reports[0] = '\0';
  if (dbl) {
    double al = 1, be = 0;
    dgemm_(&ta, &tb, &m, &n, &k, &al, da, &lda, db, &ldb, &be, dc, &ldc);
  } else {
    float al = 1, be = 0;
    sgemm_(&ta, &tb, &m, &n, &k, &al, sa, &lda, sb, &ldb, &be, sc, &ldc);
  }
  printf("%cgemm_('%c','%c', m=%d n=%d k=%d lda=%d ldb=%d ldc=%d) -> %s; after: %d %d\n", dbl ? 'd' : 's', ta, tb, m, n,
         k, lda, ldb, ldc, reports[0] ? reports : "none", RowMajorStrg, CBLAS_CallFromC);
}

static void cblas(int dbl, int layout, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
  reports[0] = '\0';
  call_cblas_gemm(dbl, layout, ta, tb, m, n, k, lda, ldb, ldc);
  printf("cblas_%cgemm(%d, %d, %d, M=%d N=%d K=%d lda=%d ldb=%d ldc=%d) -> %s; after: %d %d\n", dbl ? 'd' : 's', layout,
         ta, tb, m, n, k, lda, ldb, ldc, reports[0] ? reports : "none", RowMajorStrg, CBLAS_CallFromC);
}

/* A legal call op(A) m x k, op(B) k x n with m=4, n=3, k=5 (every minimum
 * leading dimension differs) and the smallest leading dimensions, then each
 * argument alone made bad: below zero, or one short of its minimum. */
static void fortran_cases(int dbl) {
  static const char trans[] = {'N', 'T', 'C', 'n', 't', 'c'};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      char ta = trans[i], tb = trans[j];
      int nota = ta == 'N' || ta == 'n', notb = tb == 'N' || tb == 'n';
      int m = 4, n = 3, k = 5, lda = nota ? m : k, ldb = notb ? k : n, ldc = m;
      fortran(dbl, ta, tb, m, n, k, lda, ldb, ldc);
      fortran(dbl, ta, tb, -1, n, k, lda, ldb, ldc);
      fortran(dbl, ta, tb, m, -1, k, lda, ldb, ldc);
      fortran(dbl, ta, tb, m, n, -1, lda, ldb, ldc);
      fortran(dbl, ta, tb, m, n, k, lda - 1, ldb, ldc);
      fortran(dbl, ta, tb, m, n, k, lda, ldb - 1, ldc);
      fortran(dbl, ta, tb, m, n, k, lda, ldb, ldc - 1);
      fortran(dbl, ta, tb, 0, 0, 0, 0, 1, 1); /* lda < max(1, 0) */
      fortran(dbl, ta, tb, 0, 0, 0, 1, 0, 1);
      fortran(dbl, ta, tb, 0, 0, 0, 1, 1, 0);
    }
  static const char bad[] = {'X', 'x', 'R', ' ', '1'};
  for (int i = 0; i < 5; ++i) {
    fortran(dbl, bad[i], 'N', 4, 3, 5, 4, 5, 4);
    fortran(dbl, 'N', bad[i], 4, 3, 5, 4, 5, 4);
  }
  /* several bad: the first in argument order is reported */
  fortran(dbl, 'X', 'Y', -1, -1, -1, 0, 0, 0);
  fortran(dbl, 'N', 'Y', -1, -1, -1, 0, 0, 0);
  fortran(dbl, 'N', 'N', -1, -1, -1, 0, 0, 0);
  fortran(dbl, 'N', 'N', 4, -1, -1, 0, 0, 0);
  fortran(dbl, 'N', 'N', 4, 3, -1, 0, 0, 0);
  fortran(dbl, 'N', 'N', 4, 3, 5, 0, 0, 0);
  fortran(dbl, 'N', 'N', 4, 3, 5, 4, 0, 0);
}

static void cblas_cases(int dbl) {
  static const int layouts[] = {CblasColMajor, CblasRowMajor};
  static const int trans[] = {CblasNoTrans, CblasTrans, CblasConjTrans};
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        int layout = layouts[l], ta = trans[i], tb = trans[j], row = layout == CblasRowMajor;
        int m = 4, n = 3, k = 5;
        /* stored rows x cols of A (op(A) m x k) and B (op(B) k x n) */
        int ar = ta == CblasNoTrans ? m : k, ac = ta == CblasNoTrans ? k : m;
        int br = tb == CblasNoTrans ? k : n, bc = tb == CblasNoTrans ? n : k;
        int lda = row ? ac : ar, ldb = row ? bc : br, ldc = row ? n : m;
        cblas(dbl, layout, ta, tb, m, n, k, lda, ldb, ldc);
        cblas(dbl, layout, ta, tb, -1, n, k, lda, ldb, ldc);
        cblas(dbl, layout, ta, tb, m, -1, k, lda, ldb, ldc);
        cblas(dbl, layout, ta, tb, m, n, -1, lda, ldb, ldc);
        cblas(dbl, layout, ta, tb, m, n, k, lda - 1, ldb, ldc);
        cblas(dbl, layout, ta, tb, m, n, k, lda, ldb - 1, ldc);
        cblas(dbl, layout, ta, tb, m, n, k, lda, ldb, ldc - 1);
        cblas(dbl, layout, ta, tb, 0, 0, 0, 0, 1, 1);
        cblas(dbl, layout, ta, tb, 0, 0, 0, 1, 0, 1);
        cblas(dbl, layout, ta, tb, 0, 0, 0, 1, 1, 0);
        cblas(dbl, layout, 0, tb, m, n, k, lda, ldb, ldc);
        cblas(dbl, layout, ta, 0, m, n, k, lda, ldb, ldc);
      }
  for (int bad = 0; bad < 200; bad += 99) {
    cblas(dbl, bad, CblasNoTrans, CblasNoTrans, 4, 3, 5, 4, 5, 4);
    cblas(dbl, bad, 0, 0, -1, -1, -1, 0, 0, 0);
  }
  /* several bad: the first in the order of the call actually run */
  for (int l = 0; l < 2; ++l) {
    int layout = layouts[l];
    cblas(dbl, layout, 0, 0, -1, -1, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, 0, -1, -1, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, -1, -1, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, 4, -1, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, -1, 3, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, 4, 3, -1, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, 4, 3, 5, 0, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, 4, 3, 5, 5, 0, 0);
    cblas(dbl, layout, CblasNoTrans, CblasNoTrans, 4, 3, 5, 0, 5, 0);
  }
}

int main(void) {
  for (int dbl = 0; dbl < 2; ++dbl) {
    fortran_cases(dbl);
    cblas_cases(dbl);
  }
  return 0;
}
