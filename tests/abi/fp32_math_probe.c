/* f32 GEMM through sgemm_ and cblas_sgemm (and dnnl_sgemm, where HCOps has
 * its oneDNN layer: PROBE_DNNL) for test_fp32_math.sh, checked
 * against f64 for the HCOPS_FP32_MATH mode named by argv[1]:
 *   strict  every element within (k + 4) 2^-23 S, S = |alpha| sum|a||b| + |beta c|
 *   bf16    within (2^-7 + 2^-15 + (k + 4) 2^-23) S of the exact product, and
 *           within (k + 4) 2^-23 S of the product of the inputs rounded to bf16
 *           (round to nearest even): the inputs were rounded, nothing more;
 *   bf16x3  within (2^-14 + (3k + 4) 2^-23) S of the exact product, and within
 *           (3k + 4) 2^-23 S of the sum of the three products of the parts
 *           hi = bf16(x), lo = bf16(x - hi): a_hi b_hi + a_hi b_lo + a_lo b_hi.
 * Writes every C it computed, bytes as they are, to argv[2] (the script
 * compares runs bit for bit) and prints "mean_error <e>": the mean over the
 * elements of |c - exact| / S, which the script compares between modes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas/cblas.h>

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
            const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
            const int *ldc);

#ifdef PROBE_DNNL
/* oneDNN's C declaration (row-major; dnnl_dim_t is int64_t, 0 is success). */
int dnnl_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
               const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
#endif

enum { STRICT, BF16, BF16X3 };

static uint64_t rng = 0x6670333221ULL;
static float unit(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(rng >> 11) * 0x1p-52 - 1.0);
}

static float bf16(float f) { /* to the nearest bf16, ties to even; finite inputs */
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

static int mode, failures;
static double err_sum;
static long err_count;

/* Checks C(i, j) (column-major storage via ld, or row-major) of one call. */
static void check(const char *what, int row, char ta, char tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, const float *cin, const float *c, int ldc) {
  int shown = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double exact = 0, abs_s = 0, split = 0;
      for (int p = 0; p < k; ++p) {
        /* op(A)(i, p), op(B)(p, j) */
        const int ai = ta == 'N' ? i : p, ap = ta == 'N' ? p : i, bp = tb == 'N' ? p : j, bj = tb == 'N' ? j : p;
        const float x = row ? a[ai * lda + ap] : a[ai + ap * lda];
        const float y = row ? b[bp * ldb + bj] : b[bp + bj * ldb];
        exact += (double)x * y;
        abs_s += fabs((double)x * y);
        const float xh = bf16(x), yh = bf16(y), xl = bf16(x - xh), yl = bf16(y - yh);
        split += mode == BF16 ? (double)xh * yh : (double)xh * yh + (double)xh * yl + (double)xl * yh;
      }
      const size_t at = row ? (size_t)i * ldc + j : (size_t)i + (size_t)j * ldc;
      const double cterm = beta == 0 ? 0.0 : (double)beta * cin[at];
      const double s = fabs(alpha) * abs_s + fabs(cterm) + 0x1p-120;
      const double got = c[at], want = alpha * exact + cterm, want_split = alpha * split + cterm;
      const double acc = (mode == BF16X3 ? 3.0 * k + 4 : k + 4) * 0x1p-23 * s;
      const double stated = mode == STRICT ? acc : mode == BF16 ? (0x1p-7 + 0x1p-15) * s + acc : 0x1p-14 * s + acc;
      const int ok = isfinite(got) && fabs(got - want) <= stated && (mode == STRICT || fabs(got - want_split) <= acc);
      err_sum += fabs(got - want) / s;
      ++err_count;
      if (ok) continue;
      if (shown++ < 3)
        printf("FAIL %s: C(%d,%d) = %.9g, exact %.9g (bound %.3g), %s %.9g (bound %.3g)\n", what, i, j, got, want,
               stated, mode == STRICT ? "-" : "from the bf16 parts", want_split, acc);
      ++failures;
    }
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--routines")) { /* what it calls, for the script */
#ifdef PROBE_DNNL
    puts("sgemm_ cblas_sgemm dnnl_sgemm");
#else
    puts("sgemm_ cblas_sgemm");
#endif
    return 0;
  }
  if (argc != 3 || (strcmp(argv[1], "strict") && strcmp(argv[1], "bf16") && strcmp(argv[1], "bf16x3"))) {
    fprintf(stderr, "usage: %s strict|bf16|bf16x3 <output file>\n", argv[0]);
    return 2;
  }
  mode = !strcmp(argv[1], "strict") ? STRICT : !strcmp(argv[1], "bf16") ? BF16 : BF16X3;
  FILE *out = fopen(argv[2], "wb");
  if (!out) {
    perror(argv[2]);
    return 2;
  }
  /* sgemm_: A^T, B, odd sizes, leading dimensions above the minimum. */
  {
    const int m = 67, n = 45, k = 129, lda = k + 3, ldb = k + 1, ldc = m + 2;
    const float alpha = 1.25f, beta = -0.5f;
    float *a = malloc(sizeof(float) * lda * m), *b = malloc(sizeof(float) * ldb * n);
    float *c = malloc(sizeof(float) * ldc * n), *c0 = malloc(sizeof(float) * ldc * n);
    for (int i = 0; i < lda * m; ++i) a[i] = unit();
    for (int i = 0; i < ldb * n; ++i) b[i] = 3 * unit();
    for (int i = 0; i < ldc * n; ++i) c[i] = c0[i] = unit();
    sgemm_("T", "N", &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
    check("sgemm_ T N 67x45x129", 0, 'T', 'N', m, n, k, alpha, a, lda, b, ldb, beta, c0, c, ldc);
    fwrite(c, sizeof(float), (size_t)ldc * n, out);
    free(a), free(b), free(c), free(c0);
  }
  /* cblas_sgemm, row major, B^T, beta = 0 over NaN. */
  {
    const int m = 53, n = 71, k = 96, lda = k, ldb = k + 5, ldc = n + 1;
    float *a = malloc(sizeof(float) * lda * m), *b = malloc(sizeof(float) * ldb * n);
    float *c = malloc(sizeof(float) * ldc * m), *c0 = malloc(sizeof(float) * ldc * m);
    for (int i = 0; i < lda * m; ++i) a[i] = 0.5f * unit();
    for (int i = 0; i < ldb * n; ++i) b[i] = unit();
    for (int i = 0; i < ldc * m; ++i) c[i] = c0[i] = NAN;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    check("cblas_sgemm RowMajor N T 53x71x96", 1, 'N', 'T', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c0, c, ldc);
    for (int i = 0; i < m; ++i) fwrite(c + (size_t)i * ldc, sizeof(float), n, out);
    free(a), free(b), free(c), free(c0);
  }
#ifdef PROBE_DNNL
  /* dnnl_sgemm, row major, A^T, B^T. */
  {
    const int m = 40, n = 33, k = 200, lda = m + 3, ldb = k + 2, ldc = n;
    float *a = malloc(sizeof(float) * lda * k), *b = malloc(sizeof(float) * ldb * n);
    float *c = malloc(sizeof(float) * ldc * m), *c0 = malloc(sizeof(float) * ldc * m);
    for (int i = 0; i < lda * k; ++i) a[i] = unit();
    for (int i = 0; i < ldb * n; ++i) b[i] = 2 * unit();
    for (int i = 0; i < ldc * m; ++i) c[i] = c0[i] = unit();
    if (dnnl_sgemm('T', 'T', m, n, k, 0.75f, a, lda, b, ldb, 2.0f, c, ldc) != 0) {
      printf("FAIL dnnl_sgemm: not dnnl_success\n");
      ++failures;
    }
    check("dnnl_sgemm RowMajor T T 40x33x200", 1, 'T', 'T', m, n, k, 0.75f, a, lda, b, ldb, 2.0f, c0, c, ldc);
    for (int i = 0; i < m; ++i) fwrite(c + (size_t)i * ldc, sizeof(float), n, out);
    free(a), free(b), free(c), free(c0);
  }
#endif
  fclose(out);
  printf("mean_error %.6e\n", err_sum / (double)err_count);
  printf("%s: %d element(s) out of bounds\n", argv[1], failures);
  return failures ? 1 : 0;
}
