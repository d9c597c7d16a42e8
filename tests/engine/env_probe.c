/* Drives libhcops the way an application would for the shell tests: two
 * native SGEMMs, a DGEMM and two forwarded calls, each checked, so a bad environment
 * must still give right answers. Prints "gemm: ok|WRONG" and
 * "forwarded: ok|WRONG"; exit 0 when both are ok. */
#include <math.h>
#include <stdio.h>

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);
float sdot_(const int *, const float *, const int *, const float *, const int *);
void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *);

static int gemm_ok(int n) {
  static float a[200 * 200], b[200 * 200], c[200 * 200];
  const float one = 1, zero = 0;
  for (int i = 0; i < n * n; ++i) {
    a[i] = (float)(i % 7) - 3;
    b[i] = (float)(i % 5) - 2;
    c[i] = NAN;
  }
  sgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double ref = 0;
      for (int p = 0; p < n; ++p) ref += (double)a[i + p * n] * b[p + j * n];
      if (fabs(c[i + j * n] - ref) > 1e-3) return 0;
    }
  return 1;
}

/* Odd sizes: the tiles' edges of whichever family serves f64. */
static int dgemm_ok(int m, int n, int k) {
  static double a[100 * 100], b[100 * 100], c[100 * 100];
  const double one = 1, zero = 0;
  for (int i = 0; i < m * k; ++i) a[i] = (double)(i % 11) - 5 + 1.0 / 3;
  for (int i = 0; i < k * n; ++i) b[i] = (double)(i % 13) - 6 - 1.0 / 7;
  for (int i = 0; i < m * n; ++i) c[i] = NAN;
  dgemm_("N", "T", &m, &n, &k, &one, a, &m, b, &n, &zero, c, &m);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      long double ref = 0;
      for (int p = 0; p < k; ++p) ref += (long double)a[i + p * m] * b[j + p * n];
      if (!(fabs((double)(c[i + j * m] - ref)) <= 1e-12 * k * 50)) return 0;
    }
  return 1;
}

int main(void) {
  const int n = 5, inc = 1;
  const float x[5] = {1, 2, 3, 4, 5};
  const int gemm = gemm_ok(200) && gemm_ok(37) && dgemm_ok(97, 61, 83);
  const int forwarded = sdot_(&n, x, &inc, x, &inc) == 55.0f && sdot_(&n, x, &inc, x, &inc) == 55.0f;
  printf("gemm: %s\nforwarded: %s\n", gemm ? "ok" : "WRONG", forwarded ? "ok" : "WRONG");
  return gemm && forwarded ? 0 : 1;
}
