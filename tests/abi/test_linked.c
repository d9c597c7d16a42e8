/* A plain program linked with -lhcops, no preloading and no dlopen: the
 * symbols must resolve at link time and give correct answers, checked
 * against naive loops in double. */
#include <math.h>
#include <stdio.h>

#include "blas_decls.h"

static int passed, failed;

static void expect(const char *what, int ok) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    printf("FAIL: %s\n", what);
  }
}

/* Deterministic entries in [-1, 1) without a random generator. */
static double entry(int i, int salt) { return ((i * 7919 + salt * 104729) % 2001) / 1000.0 - 1.0; }

int main(void) {
  enum { M = 37, N = 29, K = 41, LDA = K + 3, LDB = N + 2, LDC = N + 5 };

  /* cblas_sgemm, row-major, no transposes, padded rows. */
  static float a[M * LDA], b[K * LDB], c[M * LDC];
  for (int i = 0; i < M * LDA; ++i) a[i] = (float)entry(i, 1);
  for (int i = 0; i < K * LDB; ++i) b[i] = (float)entry(i, 2);
  for (int i = 0; i < M * LDC; ++i) c[i] = (float)entry(i, 3);
  static float c_in[M * LDC];
  for (int i = 0; i < M * LDC; ++i) c_in[i] = c[i];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 0.75f, a, LDA, b, LDB, -0.5f, c, LDC);
  int ok = 1;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < LDC; ++j) {
      if (j >= N) { /* padding must be untouched */
        ok &= c[i * LDC + j] == c_in[i * LDC + j];
        continue;
      }
      double s = 0, abs_s = 0;
      for (int l = 0; l < K; ++l) {
        s += (double)a[i * LDA + l] * b[l * LDB + j];
        abs_s += fabs((double)a[i * LDA + l] * b[l * LDB + j]);
      }
      double want = 0.75 * s - 0.5 * c_in[i * LDC + j];
      ok &= fabs(c[i * LDC + j] - want) <= 4.0 * (K + 2) * 1.2e-7 * (abs_s + 1.0);
    }
  expect("cblas_sgemm RowMajor NN 37x29x41", ok);

  /* dgemm_, A transposed, column-major. */
  static double ad[K * M], bd[K * N], cd[M * N];
  for (int i = 0; i < K * M; ++i) ad[i] = entry(i, 4);
  for (int i = 0; i < K * N; ++i) bd[i] = entry(i, 5);
  for (int i = 0; i < M * N; ++i) cd[i] = NAN; /* beta == 0 must ignore it */
  {
    const int m = M, n = N, k = K;
    const double alpha = 1.25, beta = 0.0;
    dgemm_("T", "N", &m, &n, &k, &alpha, ad, &k, bd, &k, &beta, cd, &m);
  }
  ok = 1;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      double s = 0, abs_s = 0;
      for (int l = 0; l < K; ++l) {
        s += ad[i * K + l] * bd[j * K + l];
        abs_s += fabs(ad[i * K + l] * bd[j * K + l]);
      }
      ok &= fabs(cd[j * M + i] - 1.25 * s) <= 4.0 * (K + 2) * 2.3e-16 * abs_s;
    }
  expect("dgemm_ TN 37x29x41, beta=0 over NaN", ok);

  /* Forwarded routines: a double return value and an in-place update. */
  {
    const int n = 1000, inc = 1;
    static double x[1000], y[1000];
    double want = 0, abs_sum = 0;
    for (int i = 0; i < n; ++i) {
      x[i] = entry(i, 6);
      y[i] = entry(i, 7);
      want += x[i] * y[i];
      abs_sum += fabs(x[i] * y[i]);
    }
    double got = ddot_(&n, x, &inc, y, &inc);
    expect("ddot_ n=1000", fabs(got - want) <= 2.0 * n * 2.3e-16 * abs_sum);

    const double alpha = -2.0;
    daxpy_(&n, &alpha, x, &inc, y, &inc);
    ok = 1;
    for (int i = 0; i < n; ++i) ok &= fabs(y[i] - (entry(i, 7) - 2.0 * x[i])) <= 4.5e-16 * 3.0;
    expect("daxpy_ n=1000", ok);
  }

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
