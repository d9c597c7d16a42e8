/* dnnl_sgemm and dnnl_gemm_bf16bf16f32 of libhcops (linked, as -ldnnl would
 * be) against the real libdnnl's own (opened privately from HCOPS_TEST_DNNL)
 * and an f64 reference: results, every bad argument's status, and the
 * special cases (beta = 0 over NaN, alpha = 0 over NaN, M, N or K zero),
 * with C's padding untouched. Values are small integers (exact in bf16 and
 * f32, sums too), alpha and beta binary fractions, so every result is exact
 * whatever the summation order and both libraries must agree (bit for bit
 * on x86-64; on AArch64 the sign of a zero may differ: same_values).
 *   test_dnnl_gemm          all of it, against the real library too
 *   test_dnnl_gemm alone    without libdnnl: results against f64, statuses
 *                           as the real library gives them, and libdnnl
 *                           never loaded (dnnl_sgemm needs none)
 *   test_dnnl_gemm one      one call of each (for test_dnnl_gemm.sh's
 *                           HCOPS_VERBOSE and HCOPS_DNNL checks) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exported by libdnnl, declared in none of its headers. */
dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                    const uint16_t *A, dnnl_dim_t lda, const uint16_t *B, dnnl_dim_t ldb, float beta,
                                    float *C, dnnl_dim_t ldc);
typedef dnnl_status_t (*sgemm_fn)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float, const float *, dnnl_dim_t,
                                  const float *, dnnl_dim_t, float, float *, dnnl_dim_t);
typedef dnnl_status_t (*bf16_fn)(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t, float, const uint16_t *, dnnl_dim_t,
                                 const uint16_t *, dnnl_dim_t, float, float *, dnnl_dim_t);

static sgemm_fn real_sgemm;
static bf16_fn real_bf16;
static int checks, failures;
#include "common/check.h"

static uint32_t rng = 12345;
static int rnd(int n) {
  rng = rng * 1664525u + 1013904223u;
  return (int)((rng >> 8) % (uint32_t)n);
}

static float f32_of(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t bf16_of(float f) { /* exact for the small integers used */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static int is_n(char t) { return t == 'N' || t == 'n'; }
static long max1(long x) { return x > 1 ? x : 1; }
static int same_bits(const float *x, const float *y, size_t n) { return memcmp(x, y, n * sizeof *x) == 0; }
/* Equal values, a zero of either sign equal to the other: where every sum
 * is exact, the sign of a zero result still depends on how alpha AB and
 * beta C are added (-0.5 * 0 + -2 * 0 is -0, the f64 reference's and
 * HCOps' answer; oneDNN's AArch64 GEMM gives +0 there, its x86-64 one -0).
 * No NaN arises in the random problems. */
static int same_values(const float *x, const float *y, size_t n) {
#if defined(__x86_64__)
  return same_bits(x, y, n);
#else
  for (size_t i = 0; i < n; ++i)
    if (!(x[i] == y[i])) return 0;
  return 1;
#endif
}

/* One problem: op(A) M x K, op(B) K x N, C M x N, all row-major. */
struct problem {
  char ta, tb;
  long m, n, k, lda, ldb, ldc;
  float alpha, beta;
};

/* Row-major op(X)(i, p) of X stored with leading dimension ld. */
static double at(const float *x, char t, long ld, long i, long p) { return is_n(t) ? x[i * ld + p] : x[p * ld + i]; }

/* Runs p on HCOps (and the real library), f32 and bf16, and compares. */
static void run_problem(const struct problem *p, int with_real) {
  const long rows_a = is_n(p->ta) ? p->m : p->k, rows_b = is_n(p->tb) ? p->k : p->n;
  const size_t na = (size_t)(rows_a * p->lda + 1), nb = (size_t)(rows_b * p->ldb + 1), nc = (size_t)(p->m * p->ldc + 1);
  float *a = malloc(na * 4), *b = malloc(nb * 4), *c0 = malloc(nc * 4), *ch = malloc(nc * 4), *cr = malloc(nc * 4);
  uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2);
  double *ref = malloc(nc * 8);
  for (size_t i = 0; i < na; ++i) ha[i] = bf16_of(a[i] = (float)(rnd(17) - 8));
  for (size_t i = 0; i < nb; ++i) hb[i] = bf16_of(b[i] = (float)(rnd(17) - 8));
  for (size_t i = 0; i < nc; ++i) c0[i] = (float)(rnd(9) - 4);
  /* Padding and the element past the end: a sentinel no result equals. */
  for (long i = 0; i < p->m; ++i)
    for (long j = p->n; j < p->ldc; ++j) c0[i * p->ldc + j] = -1234.5f;
  c0[nc - 1] = -1234.5f;
  for (long i = 0; i < p->m; ++i)
    for (long j = 0; j < p->n; ++j) {
      double s = 0;
      for (long q = 0; q < p->k; ++q) s += at(a, p->ta, p->lda, i, q) * at(b, p->tb, p->ldb, q, j);
      ref[i * p->ldc + j] = p->alpha * s + p->beta * c0[i * p->ldc + j];
    }
  for (int bf = 0; bf < 2; ++bf) {
    const char *what = bf ? "dnnl_gemm_bf16bf16f32" : "dnnl_sgemm";
    memcpy(ch, c0, nc * 4);
    memcpy(cr, c0, nc * 4);
    dnnl_status_t st =
        bf ? dnnl_gemm_bf16bf16f32(p->ta, p->tb, p->m, p->n, p->k, p->alpha, ha, p->lda, hb, p->ldb, p->beta, ch,
                                   p->ldc)
           : dnnl_sgemm(p->ta, p->tb, p->m, p->n, p->k, p->alpha, a, p->lda, b, p->ldb, p->beta, ch, p->ldc);
    /* Under HCOPS_DNNL=0 the call is the real library's, which may have no
     * bf16 GEMM on this CPU (below). */
    const char *takeover = getenv("HCOPS_DNNL");
    if (bf && st == dnnl_unimplemented && takeover && strcmp(takeover, "0") == 0) {
      printf("NOTE: %s handed on to the real libdnnl: dnnl_unimplemented on this CPU\n", what);
      continue;
    }
    CHECK(st == dnnl_success, "%s %c%c %ldx%ldx%ld: status %d", what, p->ta, p->tb, p->m, p->n, p->k, (int)st);
    long bad = 0;
    for (long i = 0; i < p->m; ++i)
      for (long j = 0; j < p->ldc; ++j) {
        const size_t at_ij = (size_t)(i * p->ldc + j);
        bad += j < p->n ? ch[at_ij] != (float)ref[at_ij] : ch[at_ij] != c0[at_ij];
      }
    bad += ch[nc - 1] != c0[nc - 1];
    CHECK(bad == 0, "%s %c%c M=%ld N=%ld K=%ld lda=%ld ldb=%ld ldc=%ld alpha=%g beta=%g: %ld elements wrong", what,
          p->ta, p->tb, p->m, p->n, p->k, p->lda, p->ldb, p->ldc, p->alpha, p->beta, bad);
    if (with_real) {
      st = bf ? real_bf16(p->ta, p->tb, p->m, p->n, p->k, p->alpha, ha, p->lda, hb, p->ldb, p->beta, cr, p->ldc)
              : real_sgemm(p->ta, p->tb, p->m, p->n, p->k, p->alpha, a, p->lda, b, p->ldb, p->beta, cr, p->ldc);
      /* A real libdnnl without this GEMM on this CPU (oneDNN 2.6's bf16 one
       * needs AVX512_CORE or AMX on x86-64 and does not exist on AArch64)
       * declines it; HCOps computes it on any CPU, checked against f64 above. */
      static int said_unimplemented[2];
      if (bf && st == dnnl_unimplemented) {
        if (!said_unimplemented[bf]++)
          printf("NOTE: the real libdnnl has no %s on this CPU (dnnl_unimplemented): HCOps' results are checked "
                 "against f64 only\n", what);
      } else {
        CHECK(st == dnnl_success && same_values(ch, cr, nc), "%s %c%c %ldx%ldx%ld: differs from libdnnl's (status %d)",
              what, p->ta, p->tb, p->m, p->n, p->k, (int)st);
      }
    }
  }
  (void)f32_of;
  free(a), free(b), free(c0), free(ch), free(cr), free(ha), free(hb), free(ref);
}

static void random_problems(int with_real) {
  static const char trans[] = "NnTt";
  static const float alphas[] = {1.0f, -0.5f, 2.0f, 0.25f}, betas[] = {0.0f, 1.0f, 0.5f, -2.0f};
  for (int t = 0; t < 40; ++t) {
    struct problem p;
    p.ta = trans[rnd(4)];
    p.tb = trans[rnd(4)];
    const int big = t % 10 == 9; /* a few beyond one block of the kernels */
    p.m = 1 + rnd(big ? 300 : 40);
    p.n = 1 + rnd(big ? 300 : 40);
    p.k = 1 + rnd(big ? 400 : 40);
    p.lda = (is_n(p.ta) ? p.k : p.m) + rnd(3);
    p.ldb = (is_n(p.tb) ? p.n : p.k) + rnd(3);
    p.ldc = p.n + rnd(3);
    p.alpha = alphas[rnd(4)];
    p.beta = betas[rnd(4)];
    run_problem(&p, with_real);
  }
}

/* A call with arguments that may be bad or special, on both libraries;
 * returns HCOps's status, after checking that the real one gives the same
 * status and C (bit for bit: NaN included). */
struct call {
  char ta, tb;
  long m, n, k;
  float alpha;
  int null_a, null_b, null_c;
  long lda, ldb;
  float beta;
  long ldc;
};

enum { CAP = 64 };

static void fill(float *x, float v) {
  for (int i = 0; i < CAP; ++i) x[i] = v;
}

static void compare_call(int line, const struct call *q, float a_val, float c_val, int with_real, int expect) {
  float a[CAP], b[CAP], ch[CAP], cr[CAP], ch_f32[CAP];
  uint16_t ha[CAP], hb[CAP];
  fill(a, a_val);
  fill(b, 1.0f);
  for (int i = 0; i < CAP; ++i) ha[i] = bf16_of(a[i]), hb[i] = bf16_of(b[i]);
  for (int bf = 0; bf < 2; ++bf) {
    fill(ch, c_val);
    fill(cr, c_val);
    dnnl_status_t sh, sr = expect;
    if (bf)
      sh = dnnl_gemm_bf16bf16f32(q->ta, q->tb, q->m, q->n, q->k, q->alpha, q->null_a ? NULL : ha, q->lda,
                                 q->null_b ? NULL : hb, q->ldb, q->beta, q->null_c ? NULL : ch, q->ldc);
    else
      sh = dnnl_sgemm(q->ta, q->tb, q->m, q->n, q->k, q->alpha, q->null_a ? NULL : a, q->lda, q->null_b ? NULL : b,
                      q->ldb, q->beta, q->null_c ? NULL : ch, q->ldc);
    if (with_real) {
      if (bf)
        sr = real_bf16(q->ta, q->tb, q->m, q->n, q->k, q->alpha, q->null_a ? NULL : ha, q->lda, q->null_b ? NULL : hb,
                       q->ldb, q->beta, q->null_c ? NULL : cr, q->ldc);
      else
        sr = real_sgemm(q->ta, q->tb, q->m, q->n, q->k, q->alpha, q->null_a ? NULL : a, q->lda, q->null_b ? NULL : b,
                        q->ldb, q->beta, q->null_c ? NULL : cr, q->ldc);
      if (bf && expect == dnnl_success && sr == dnnl_unimplemented) {
        /* No bf16 GEMM in the real library on this CPU (random_problems'
         * note): HCOps' bf16 answer must be its f32 one, bit for bit (the
         * inputs are exact in bf16), which was checked against libdnnl's. */
        CHECK(sh == dnnl_success && same_bits(ch, ch_f32, CAP),
              "line %d, bf16: status %d, C differs from the f32 GEMM's (c[0] %g against %g)", line, (int)sh, ch[0],
              ch_f32[0]);
        continue;
      }
      CHECK(sr == expect, "line %d, %s: libdnnl's status %d, the test expects %d", line, bf ? "bf16" : "f32", (int)sr,
            expect);
      /* libdnnl's bf16 GEMM with alpha = 0 and beta = 0 still multiplies
       * (NaN * 0 = NaN), its f32 GEMM does not: HCOps reads neither A nor B
       * in both, and writes zeros as the f32 one does. */
      if (bf && q->alpha == 0.0f && q->beta == 0.0f && isnan(a_val)) {
        float zeros[CAP];
        fill(zeros, c_val);
        for (long i = 0; i < q->m * q->ldc; ++i) zeros[i] = 0.0f;
        CHECK(same_bits(ch, zeros, CAP), "line %d, bf16: alpha = beta = 0 did not give zeros", line);
      } else {
        CHECK(same_bits(ch, cr, CAP), "line %d, %s: C differs from libdnnl's (c[0] %g against %g)", line,
              bf ? "bf16" : "f32", ch[0], cr[0]);
      }
    } else if (expect != dnnl_success) {
      for (int i = 0; i < CAP; ++i) cr[i] = c_val;
      CHECK(same_bits(ch, cr, CAP), "line %d, %s: C written on an error", line, bf ? "bf16" : "f32");
    }
    CHECK(sh == sr, "line %d, %s: status %d, libdnnl's %d", line, bf ? "bf16" : "f32", (int)sh, (int)sr);
    if (!bf) memcpy(ch_f32, ch, sizeof ch);
  }
}

#define BAD(...) compare_call(__LINE__, &(struct call){__VA_ARGS__}, 1.0f, 3.0f, with_real, dnnl_invalid_arguments)
#define GOOD(a_val, c_val, ...) \
  compare_call(__LINE__, &(struct call){__VA_ARGS__}, a_val, c_val, with_real, dnnl_success)

static void arguments(int with_real) {
  /*   ta   tb   M   N   K  alpha nA nB nC lda ldb beta ldc */
  BAD('C', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD('N', 'X', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD(0, 'N', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD('N', 'N', -1, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD('N', 'N', 2, -3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD('N', 'N', 2, 3, -4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);
  BAD('N', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 3, 3, 0.0f, 3);  /* lda < K */
  BAD('T', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 1, 3, 0.0f, 3);  /* lda < M */
  BAD('N', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 4, 2, 0.0f, 3);  /* ldb < N */
  BAD('n', 't', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);  /* ldb < K */
  BAD('N', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 2);  /* ldc < N */
  BAD('N', 'N', 0, 3, 4, 1.0f, 0, 0, 0, 1, 3, 0.0f, 3);  /* lda < K with M = 0 */
  BAD('N', 'N', 2, 0, 4, 1.0f, 0, 0, 0, 4, 0, 0.0f, 0);  /* ldb, ldc < 1 */
  BAD('N', 'N', 2, 3, 0, 1.0f, 0, 0, 0, 0, 3, 0.0f, 3);  /* lda < 1 */
  BAD('N', 'N', 2, 3, 4, 1.0f, 1, 0, 0, 4, 3, 0.0f, 3);  /* null A */
  BAD('N', 'N', 2, 3, 4, 1.0f, 0, 1, 0, 4, 3, 0.0f, 3);  /* null B */
  BAD('N', 'N', 2, 3, 4, 1.0f, 0, 0, 1, 4, 3, 0.0f, 3);  /* null C */
  BAD('N', 'N', 0, 0, 0, 1.0f, 1, 1, 1, 1, 1, 0.0f, 1);  /* null with nothing to do */
  BAD('N', 'X', -1, 3, 4, 1.0f, 0, 0, 0, 0, 3, 0.0f, 0); /* several at once */
  /* Special cases: the real library's results, bit for bit. */
  GOOD(1.0f, NAN, 'N', 'N', 2, 3, 4, 1.0f, 0, 0, 0, 4, 3, 0.0f, 3);  /* beta 0: C not read */
  GOOD(NAN, 2.0f, 'N', 'T', 2, 3, 4, 0.0f, 0, 0, 0, 4, 4, 0.5f, 3);  /* alpha 0: A not read */
  GOOD(NAN, NAN, 'T', 'N', 2, 3, 4, 0.0f, 0, 0, 0, 2, 3, 0.0f, 3);   /* both: zeros */
  /* K 0: C untouched, even by beta, on x86-64; beta C (zeros for beta 0)
   * on AArch64, whichever the real library does (shim/dnnl/gemm.cpp). */
  GOOD(1.0f, 3.0f, 'N', 'N', 2, 3, 0, 1.0f, 0, 0, 0, 1, 3, 2.0f, 3);
  GOOD(1.0f, NAN, 'N', 'N', 2, 3, 0, 1.0f, 0, 0, 0, 1, 3, 0.0f, 3);
  GOOD(1.0f, 3.0f, 'N', 'N', 0, 3, 4, 1.0f, 0, 0, 0, 4, 3, 2.0f, 3); /* M 0 */
  GOOD(1.0f, 3.0f, 'N', 'N', 2, 0, 4, 1.0f, 0, 0, 0, 4, 1, 2.0f, 1); /* N 0 */
  GOOD(1.0f, 3.0f, 't', 'T', 2, 3, 4, 1.0f, 0, 0, 0, 2, 4, 1.0f, 5); /* lower case, ldc > N */
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "one") == 0) {
    struct problem p1 = {'N', 'T', 5, 7, 3, 3, 3, 7, 1.0f, 0.0f};
    run_problem(&p1, 0);
    return failures ? 1 : 0;
  }
  const int with_real = strcmp(mode, "alone") != 0;
  if (with_real) {
    const char *path = getenv("HCOPS_TEST_DNNL");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
      fprintf(stderr, "cannot open the real libdnnl (HCOPS_TEST_DNNL=%s): %s\n", path ? path : "", dlerror());
      return 1;
    }
    real_sgemm = (sgemm_fn)dlsym(h, "dnnl_sgemm");
    real_bf16 = (bf16_fn)dlsym(h, "dnnl_gemm_bf16bf16f32");
    if (!real_sgemm || !real_bf16 || (void *)real_sgemm == (void *)&dnnl_sgemm) {
      fprintf(stderr, "%s does not define the real dnnl_sgemm and dnnl_gemm_bf16bf16f32\n", path);
      return 1;
    }
  }
  random_problems(with_real);
  arguments(with_real);
  if (!with_real) {
    void *h = dlopen("libdnnl.so.2", RTLD_NOLOAD | RTLD_LAZY);
    CHECK(h == NULL, "libdnnl.so.2 was loaded by dnnl_sgemm");
  }
  printf("%s: %d failures\n", argv[0], failures);
  return failures ? 1 : 0;
}
