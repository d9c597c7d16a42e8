/* A program linked against the system BLAS (-lblas, soname libblas.so.3) and
 * nothing of HCOps: under `module load hcops` its sgemm_ must reach HCOps's
 * lib/hcops/libblas.so.3 through LD_LIBRARY_PATH. Prints the product so the
 * test can check it; exits 1 if it is wrong. */
#include <math.h>
#include <stdio.h>

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
            const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c, const int *ldc);

int main(void) {
  enum { M = 64, N = 48, K = 80 };
  static float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; ++i) a[i] = (float)((i * 37 % 17) - 8) / 8.0f;
  for (int i = 0; i < K * N; ++i) b[i] = (float)((i * 11 % 13) - 6) / 4.0f;
  const int m = M, n = N, k = K;
  const float one = 1.0f, zero = 0.0f;
  sgemm_("N", "N", &m, &n, &k, &one, a, &m, b, &k, &zero, c, &m);
  double worst = 0.0, sum = 0.0;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < M; ++i) {
      double ref = 0.0;
      for (int p = 0; p < K; ++p) ref += (double)a[i + p * M] * b[p + j * K];
      worst = fmax(worst, fabs(ref - c[i + j * M]));
      sum += c[i + j * M];
    }
  printf("blas_user: sum %.3f, largest error %.3g\n", sum, worst);
  return worst < 1e-3 ? 0 : 1;
}
