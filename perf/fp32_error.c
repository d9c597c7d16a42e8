/* hcops-fp32-error LIB TRACE [--ref LIB] [--max-calls N]: the error LIB's
 * sgemm_ makes on the distinct calls of a recorded trace (trace.h), against a
 * double-precision dgemm_ of the same inputs; for perf/fp32_math.py, which runs
 * it under each HCOPS_FP32_MATH mode (the mode is read by libhcops, so one
 * process per mode).
 *
 * Every distinct call (same arguments; the first N with --max-calls) runs once
 * with A, B and C uniform in [-1, 1) (full f32 mantissas, so that rounding to
 * bf16 shows). The error of an element is |c - r| / s, with r the reference
 * alpha op(A) op(B) + beta C and s = |alpha| |op(A)| |op(B)| + |beta| |C|, both
 * by the reference dgemm_ (--ref, default LIB's own, which HCOPS_FP32_MATH does
 * not change): the componentwise scale of the sum, which cancellation cannot
 * make zero, so one element's error reads as in units of the inputs' precision
 * (f32 accumulation of k terms: up to ~k 2^-24; bf16 inputs: ~2^-8).
 * Prints one JSON line: calls, the largest error over all of them, the median
 * over calls of each call's median error, and the call of the largest. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "bench_util.h"

#define PROG "hcops-fp32-error"

typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *, const int *);
typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *, const double *,
                         const double *, const int *, const double *, const int *, const double *, double *,
                         const int *);

static void *symbol(const char *lib, const char *name) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  void *f = h ? dlsym(h, name) : NULL;
  if (!f) {
    fprintf(stderr, PROG ": %s: %s\n", lib, h ? "no symbol" : dlerror());
    exit(2);
  }
  return f;
}

int main(int argc, char **argv) {
  const char *lib = NULL, *path = NULL, *ref = NULL;
  size_t max_calls = (size_t)-1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ref") && i + 1 < argc) ref = argv[++i];
    else if (!strcmp(argv[i], "--max-calls") && i + 1 < argc) max_calls = strtoul(argv[++i], NULL, 10);
    else if (argv[i][0] != '-' && !lib) lib = argv[i];
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else lib = path = NULL, i = argc;
  }
  if (!lib || !path) {
    fprintf(stderr, "usage: " PROG " LIB TRACE [--ref LIB] [--max-calls N]\n");
    return 2;
  }
  const sgemm_fn sgemm = (sgemm_fn)symbol(lib, "sgemm_");
  const dgemm_fn dgemm = (dgemm_fn)symbol(ref ? ref : lib, "dgemm_");
  struct trace t;
  if (trace_read(PROG, path, &t)) return 2;

  /* the distinct calls, in trace order */
  struct call *calls = malloc(t.n * sizeof *calls);
  size_t n = 0;
  for (size_t i = 0; i < t.n && n < max_calls; ++i) {
    size_t j = 0;
    while (j < n && !call_same(&calls[j], &t.calls[i])) ++j;
    if (j == n) calls[n++] = t.calls[i];
  }
  float *a = malloc(t.max_a * 4), *b = malloc(t.max_b * 4), *c = malloc(t.max_c * 4);
  double *ad = malloc(t.max_a * 8), *bd = malloc(t.max_b * 8), *cd = malloc(t.max_c * 8), *sd = malloc(t.max_c * 8);
  double *errs = malloc(t.max_c * 8), *medians = malloc(n * 8), worst = 0;
  size_t worst_call = 0;
  for (size_t i = 0; i < n; ++i) {
    const struct call *x = &calls[i];
    const size_t na = call_a_elems(x), nb = call_b_elems(x), nc = call_c_elems(x);
    for (size_t e = 0; e < na; ++e) ad[e] = a[e] = (float)bench_uniform(-1, 1);
    for (size_t e = 0; e < nb; ++e) bd[e] = b[e] = (float)bench_uniform(-1, 1);
    for (size_t e = 0; e < nc; ++e) cd[e] = c[e] = (float)bench_uniform(-1, 1);
    sgemm(&x->ta, &x->tb, &x->m, &x->n, &x->k, &x->alpha, a, &x->lda, b, &x->ldb, &x->beta, c, &x->ldc);
    for (size_t e = 0; e < nc; ++e) sd[e] = fabs(cd[e]);
    const double alpha = x->alpha, beta = x->beta, abs_alpha = fabs(alpha), abs_beta = fabs(beta);
    dgemm(&x->ta, &x->tb, &x->m, &x->n, &x->k, &alpha, ad, &x->lda, bd, &x->ldb, &beta, cd, &x->ldc);
    for (size_t e = 0; e < na; ++e) ad[e] = fabs(ad[e]);
    for (size_t e = 0; e < nb; ++e) bd[e] = fabs(bd[e]);
    dgemm(&x->ta, &x->tb, &x->m, &x->n, &x->k, &abs_alpha, ad, &x->lda, bd, &x->ldb, &abs_beta, sd, &x->ldc);
    size_t ne = 0;
    for (int col = 0; col < x->n; ++col)
      for (int row = 0; row < x->m; ++row) {
        const size_t e = row + (size_t)col * x->ldc;
        const double err = sd[e] > 0 ? fabs(c[e] - cd[e]) / sd[e] : (c[e] == cd[e] ? 0 : INFINITY);
        errs[ne++] = isnan(err) ? INFINITY : err;
      }
    qsort(errs, ne, sizeof *errs, bench_cmp_double);
    medians[i] = ne ? errs[ne / 2] : 0;
    if (ne && errs[ne - 1] > worst) worst = errs[ne - 1], worst_call = i;
  }
  qsort(medians, n, sizeof *medians, bench_cmp_double);
  const struct call *w = &calls[worst_call];
  printf("{\"calls\": %zu, \"max_err\": %.3e, \"median_err\": %.3e, \"worst_call\": \"%c%c %dx%dx%d\"}\n", n, worst,
         n ? medians[n / 2] : 0, w->ta, w->tb, w->m, w->n, w->k);
  return 0;
}
