/* The three bf16 GEMM ABIs of libhcops: OpenBLAS's sbgemm_ and
 * cblas_sbgemm, Intel MKL's cblas_gemm_bf16bf16f32 (A, B bf16; alpha, beta,
 * C float), against an f64 reference computed from the same bf16 inputs:
 * every element within (k + 4) 2^-23 (|alpha| sum|a||b| + |beta c|), the
 * bound of f32 accumulation; row and column major, every transpose each
 * library accepts, leading dimensions above the minimum, odd sizes, empty
 * products, alpha/beta cases, NaN in C with beta = 0; nothing written
 * outside C's m x n elements, A and B untouched.
 *
 * Built twice: linked with -lhcops (test_bf16_gemm), and with
 * BF16_PRELOAD linked with no BLAS at all, the entry points weak references
 * (test_bf16_gemm_preload, run by test_bf16_gemm.sh under
 * LD_PRELOAD=libhcops.so, and without it, where it must fail): an
 * application finds them either way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas/cblas.h>

void sbgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
             const bfloat16 *a, const int *lda, const bfloat16 *b, const int *ldb, const float *beta, float *c,
             const int *ldc);

/* Weak only in the program that links no BLAS: the linker may drop a
 * library that satisfies nothing but weak references (--as-needed). */
#ifdef BF16_PRELOAD
#pragma weak sbgemm_
#pragma weak cblas_sbgemm
#pragma weak cblas_gemm_bf16bf16f32
#endif

static int passed, failed;

typedef enum { SBGEMM_F77, SBGEMM_COL, SBGEMM_ROW, MKL_COL, MKL_ROW } api_t;
static const char *const api_names[] = {"sbgemm_", "cblas_sbgemm ColMajor", "cblas_sbgemm RowMajor",
                                        "cblas_gemm_bf16bf16f32 ColMajor", "cblas_gemm_bf16bf16f32 RowMajor"};

/* ---- bf16 and a reproducible random stream ------------------------------- */

static uint64_t rng = 0x48434f5053ULL;
static double unit(void) { /* uniform in [-1, 1) */
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(rng >> 11) * 0x1p-52 - 1.0;
}

static bfloat16 to_bf16(float f) { /* round to nearest even; no NaN here */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (bfloat16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static double from_bf16(bfloat16 h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- one case ------------------------------------------------------------- */

typedef struct {
  api_t api;
  int ta, tb; /* 'N'/'T', or the raw character / CBLAS value passed */
  int m, n, k;
  int pad;    /* added to every minimal leading dimension */
  float alpha, beta;
  int c_nan;  /* C holds NaN on entry (with beta = 0) */
} gcase;

static int row_major(api_t api) { return api == SBGEMM_ROW || api == MKL_ROW; }

/* Whether a transpose argument means op(X) = X. */
static int is_n(int t) { return t == 'N' || t == 'n' || t == 'R' || t == 'r' || t == CblasNoTrans || t == 114; }

/* Geometry of a stored operand of `rows` x `cols` (as op() sees it before
 * transposing): runs of `inner` elements, `outer` runs. */
static void geometry(const gcase *g, int trans_n, int rows, int cols, int *inner, int *outer) {
  int r = trans_n ? rows : cols, c = trans_n ? cols : rows; /* as stored */
  *inner = row_major(g->api) ? c : r;
  *outer = row_major(g->api) ? r : c;
}

#define GUARD 16

static void describe(const gcase *g, char *buf, size_t len) {
  snprintf(buf, len, "%s ta=%d tb=%d m=%d n=%d k=%d pad=%d alpha=%g beta=%g%s", api_names[g->api], g->ta, g->tb, g->m,
           g->n, g->k, g->pad, g->alpha, g->beta, g->c_nan ? " C=NaN" : "");
}

static void call(const gcase *g, const bfloat16 *a, int lda, const bfloat16 *b, int ldb, float *c, int ldc) {
  switch (g->api) {
    case SBGEMM_F77: {
      char ta = (char)g->ta, tb = (char)g->tb;
      sbgemm_(&ta, &tb, &g->m, &g->n, &g->k, &g->alpha, a, &lda, b, &ldb, &g->beta, c, &ldc);
      break;
    }
    case SBGEMM_COL:
    case SBGEMM_ROW:
      cblas_sbgemm(g->api == SBGEMM_ROW ? CblasRowMajor : CblasColMajor, (CBLAS_TRANSPOSE)g->ta,
                   (CBLAS_TRANSPOSE)g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb, g->beta, c, ldc);
      break;
    case MKL_COL:
    case MKL_ROW:
      cblas_gemm_bf16bf16f32(g->api == MKL_ROW ? CblasRowMajor : CblasColMajor, (CBLAS_TRANSPOSE)g->ta,
                             (CBLAS_TRANSPOSE)g->tb, g->m, g->n, g->k, g->alpha, a, lda, b, ldb, g->beta, c, ldc);
      break;
  }
}

static void run_case(const gcase *g) {
  const int an = is_n(g->ta), bn = is_n(g->tb), row = row_major(g->api);
  int ai, ao, bi, bo, ci, co;
  geometry(g, an, g->m, g->k, &ai, &ao);
  geometry(g, bn, g->k, g->n, &bi, &bo);
  geometry(g, 1, g->m, g->n, &ci, &co);
  const int lda = (ai > 1 ? ai : 1) + g->pad, ldb = (bi > 1 ? bi : 1) + g->pad, ldc = (ci > 1 ? ci : 1) + g->pad;
  const size_t na = (size_t)lda * ao + 2 * GUARD, nb = (size_t)ldb * bo + 2 * GUARD, nc = (size_t)ldc * co + 2 * GUARD;
  bfloat16 *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *a0 = malloc(na * sizeof *a),
           *b0 = malloc(nb * sizeof *b);
  float *c = malloc(nc * sizeof *c), *c0 = malloc(nc * sizeof *c);
  if (!a || !b || !a0 || !b0 || !c || !c0) {
    printf("FAIL: out of memory\n");
    exit(1);
  }
  /* Everything outside the operands' elements: NaN sentinels. */
  for (size_t i = 0; i < na; ++i) a[i] = 0x7fc1;
  for (size_t i = 0; i < nb; ++i) b[i] = 0x7fc2;
  for (size_t i = 0; i < nc; ++i) c[i] = nanf("3");
  for (int o = 0; o < ao; ++o)
    for (int i = 0; i < ai; ++i) a[GUARD + (size_t)o * lda + i] = to_bf16((float)unit());
  for (int o = 0; o < bo; ++o)
    for (int i = 0; i < bi; ++i) b[GUARD + (size_t)o * ldb + i] = to_bf16((float)(4 * unit()));
  for (int o = 0; o < co; ++o)
    for (int i = 0; i < ci; ++i) c[GUARD + (size_t)o * ldc + i] = g->c_nan ? NAN : (float)unit();
  memcpy(a0, a, na * sizeof *a);
  memcpy(b0, b, nb * sizeof *b);
  memcpy(c0, c, nc * sizeof *c);

  call(g, a + GUARD, lda, b + GUARD, ldb, c + GUARD, ldc);

  char desc[200];
  describe(g, desc, sizeof desc);
  int ok = 1;
  if (memcmp(a, a0, na * sizeof *a) || memcmp(b, b0, nb * sizeof *b)) {
    printf("FAIL %s: A or B written\n", desc);
    ok = 0;
  }
  /* op(A)(i, p) and op(B)(p, j) from their storage; C(i, j) likewise. */
#define AT(i, p) a0[GUARD + (row ? (an ? (size_t)(i) * lda + (p) : (size_t)(p) * lda + (i)) \
                            : (an ? (size_t)(p) * lda + (i) : (size_t)(i) * lda + (p)))]
#define BT(p, j) b0[GUARD + (row ? (bn ? (size_t)(p) * ldb + (j) : (size_t)(j) * ldb + (p)) \
                            : (bn ? (size_t)(j) * ldb + (p) : (size_t)(p) * ldb + (j)))]
#define CIDX(i, j) (GUARD + (row ? (size_t)(i) * ldc + (j) : (size_t)(j) * ldc + (i)))
  int shown = 0;
  for (int i = 0; ok && i < g->m; ++i)
    for (int j = 0; j < g->n; ++j) {
      double s = 0, abs_s = 0;
      for (int p = 0; p < g->k; ++p) {
        const double x = from_bf16(AT(i, p)) * from_bf16(BT(p, j));
        s += x;
        abs_s += fabs(x);
      }
      const double cin = c0[CIDX(i, j)];
      const double want = (double)g->alpha * s + (g->beta == 0 ? 0.0 : (double)g->beta * cin);
      const double bound =
          (g->k + 4) * 0x1p-23 * (fabs(g->alpha) * abs_s + (g->beta == 0 ? 0.0 : fabs(g->beta * cin))) + 0x1p-120;
      const double got = c[CIDX(i, j)];
      if (isfinite(got) && fabs(got - want) <= bound) continue;
      if (shown++ < 3) printf("FAIL %s: C(%d,%d) = %.9g, reference %.9g, bound %.3g\n", desc, i, j, got, want, bound);
      ok = 0;
    }
  /* Nothing outside C's elements changed (the sentinels are NaN: compare bits). */
  for (size_t x = 0; ok && x < nc; ++x) {
    const long e = (long)x - GUARD;
    const int inside = e >= 0 && e / ldc < co && e % ldc < ci;
    if (!inside && memcmp(&c[x], &c0[x], sizeof *c)) {
      printf("FAIL %s: C written outside its elements at offset %ld\n", desc, e);
      ok = 0;
    }
  }
  if (ok) ++passed;
  else ++failed;
  free(a);
  free(b);
  free(a0);
  free(b0);
  free(c);
  free(c0);
}

int main(void) {
  if (!sbgemm_ || !cblas_sbgemm || !cblas_gemm_bf16bf16f32) {
    printf("FAIL: sbgemm_ %s, cblas_sbgemm %s, cblas_gemm_bf16bf16f32 %s: not all are in the process "
           "(linked with -lhcops, or libhcops.so preloaded?)\n",
           sbgemm_ ? "found" : "missing", cblas_sbgemm ? "found" : "missing",
           cblas_gemm_bf16bf16f32 ? "found" : "missing");
    return 1;
  }
  static const int shapes[][3] = {{1, 1, 1},   {17, 13, 9}, {33, 29, 31}, {64, 65, 33},
                                  {7, 130, 67}, {95, 3, 129}, {2, 45, 1}};
  static const float ab[][2] = {{1, 0}, {0.75f, -0.5f}, {-1.25f, 1}, {2, 2}};
  const int f77_t[2] = {'N', 'T'}, cblas_t[2] = {CblasNoTrans, CblasTrans};
  for (int api = SBGEMM_F77; api <= MKL_ROW; ++api) {
    const int *t = api == SBGEMM_F77 ? f77_t : cblas_t;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s)
      for (int x = 0; x < 4; ++x) {
        const float *al = ab[(s + x) % 4];
        gcase g = {(api_t)api, t[x & 1], t[x >> 1], shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3) * 2,
                   al[0], al[1], 0};
        run_case(&g);
      }
    /* beta = 0 over NaN; alpha = 0 (C scaled only); k = 0; empty products. */
    const gcase extra[] = {
        {(api_t)api, t[0], t[1], 19, 23, 17, 1, 1.5f, 0, 1}, {(api_t)api, t[1], t[0], 21, 5, 40, 0, 1, 0, 1},
        {(api_t)api, t[0], t[0], 9, 11, 13, 2, 0, -2, 0},    {(api_t)api, t[1], t[1], 9, 11, 0, 1, 1, 0.5f, 0},
        {(api_t)api, t[0], t[0], 9, 11, 13, 0, 0, 0, 1},     {(api_t)api, t[0], t[0], 0, 7, 5, 0, 1, 0, 0},
        {(api_t)api, t[1], t[0], 7, 0, 5, 1, 1, 0, 0},       {(api_t)api, t[0], t[1], 5, 6, 7, 0, 0, 1, 0},
    };
    for (size_t e = 0; e < sizeof extra / sizeof *extra; ++e) run_case(&extra[e]);
  }
  /* The other transposes each library accepts for real data: Fortran
   * lower case, 'C' (as 'T') and OpenBLAS's 'R' (as 'N'); CblasConjTrans
   * everywhere, OpenBLAS's CblasConjNoTrans (114) in cblas_sbgemm. */
  const gcase other[] = {
      {SBGEMM_F77, 'n', 't', 13, 9, 11, 1, 1, 0.5f, 0},         {SBGEMM_F77, 'C', 'r', 13, 9, 11, 0, 1, 0, 0},
      {SBGEMM_F77, 'R', 'c', 13, 9, 11, 2, -1, 1, 0},           {SBGEMM_COL, CblasConjTrans, 114, 13, 9, 11, 1, 1, 0, 0},
      {SBGEMM_ROW, 114, CblasConjTrans, 13, 9, 11, 1, 1, 0, 0}, {MKL_COL, CblasConjTrans, CblasNoTrans, 13, 9, 11, 1, 1, 0, 0},
      {MKL_ROW, CblasNoTrans, CblasConjTrans, 13, 9, 11, 0, 2, 1, 0},
  };
  for (size_t e = 0; e < sizeof other / sizeof *other; ++e) run_case(&other[e]);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
