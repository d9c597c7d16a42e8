#define _POSIX_C_SOURCE 200809L

#include "blas_test_util.h"

#include <ctype.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reproducible randomness ------------------------------------------ */

#define BT_DEFAULT_SEED UINT64_C(0x48434f5053) /* "HCOPS" */

static uint64_t rng_state;

uint64_t bt_seed(void) {
  static bool known;
  static uint64_t seed;
  if (!known) {
    const char *s = getenv("HCOPS_TEST_SEED");
    seed = (s && *s) ? strtoull(s, NULL, 0) : BT_DEFAULT_SEED;
    known = true;
  }
  return seed;
}

void bt_print_repro(void) {
  const char *threads = getenv("HCOPS_NUM_THREADS");
  fprintf(stderr, "  reproduce with HCOPS_TEST_SEED=0x%llx HCOPS_NUM_THREADS=%s (reference %s)\n",
          (unsigned long long)bt_seed(), threads ? threads : "<unset>", bt_ref_path());
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void bt_rng_reset(const char *stream) {
  uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
  for (const char *p = stream; p && *p; ++p) h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
  rng_state = bt_seed() ^ h;
}

uint64_t bt_rand_u64(void) { return splitmix64(&rng_state); }

int bt_rand_int(int lo, int hi) { return lo + (int)(bt_rand_u64() % (uint64_t)(hi - lo + 1)); }

double bt_rand_unit(void) { return (double)(bt_rand_u64() >> 11) * 0x1p-52 - 1.0; }

bool bt_rand_chance(int percent) { return bt_rand_int(0, 99) < percent; }

/* ---- reference BLAS ---------------------------------------------------- */

const char *bt_ref_path(void) {
  const char *p = getenv("HCOPS_TEST_REFERENCE");
  return (p && *p) ? p : "/usr/lib/x86_64-linux-gnu/libopenblas.so.0";
}

bt_fn bt_ref_fn(const char *name) {
  static void *handle;
  if (!handle) {
    handle = dlopen(bt_ref_path(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      fprintf(stderr, "cannot load the reference BLAS: %s\n", dlerror());
      exit(1);
    }
  }
  void *sym = dlsym(handle, name);
  if (!sym) {
    fprintf(stderr, "reference BLAS %s lacks %s\n", bt_ref_path(), name);
    exit(1);
  }
  /* POSIX guarantees dlsym results convert to function pointers; ISO C
   * has no cast for it, so copy the representation. */
  bt_fn fn;
  memcpy(&fn, &sym, sizeof fn);
  return fn;
}

/* ---- guarded strided storage ------------------------------------------- */

#define GUARD_ELEMS 16
/* Quiet NaNs with a recognisable payload: a stray write is visible bit for
 * bit, and padding misread as data turns results into NaN. */
static const uint32_t SENTINEL_S = UINT32_C(0x7fc5a5a5);
static const uint64_t SENTINEL_D = UINT64_C(0x7ff8a5a5a5a5a5a5);

static size_t data_elems(const bt_mat *m) {
  size_t n = (size_t)m->ld * (size_t)m->outer;
  return n ? n : 1;
}

void bt_mat_alloc(bt_mat *m, bool dbl, int ncomp, int inner, int outer, int ld) {
  m->dbl = dbl;
  m->ncomp = ncomp;
  m->inner = inner;
  m->outer = outer;
  m->ld = ld;
  m->esize = (dbl ? 8 : 4) * (size_t)ncomp;
  m->raw_bytes = (data_elems(m) + 2 * GUARD_ELEMS) * m->esize;
  m->raw = malloc(m->raw_bytes);
  if (!m->raw) {
    fprintf(stderr, "out of memory allocating %zu bytes\n", m->raw_bytes);
    exit(1);
  }
  m->data = m->raw + GUARD_ELEMS * m->esize;
  if (dbl) {
    for (size_t off = 0; off < m->raw_bytes; off += 8) memcpy(m->raw + off, &SENTINEL_D, 8);
  } else {
    for (size_t off = 0; off < m->raw_bytes; off += 4) memcpy(m->raw + off, &SENTINEL_S, 4);
  }
}

void bt_mat_free(bt_mat *m) {
  free(m->raw);
  m->raw = NULL;
  m->data = NULL;
}

void bt_mat_copy(bt_mat *dst, const bt_mat *src) {
  bt_mat_alloc(dst, src->dbl, src->ncomp, src->inner, src->outer, src->ld);
  memcpy(dst->raw, src->raw, src->raw_bytes);
}

static size_t comp_index(const bt_mat *m, int i, int j, int comp) {
  return ((size_t)j * (size_t)m->ld + (size_t)i) * (size_t)m->ncomp + (size_t)comp;
}

double bt_mat_get(const bt_mat *m, int i, int j, int comp) {
  size_t at = comp_index(m, i, j, comp);
  return m->dbl ? ((const double *)m->data)[at] : ((const float *)m->data)[at];
}

void bt_mat_set(bt_mat *m, int i, int j, int comp, double v) {
  size_t at = comp_index(m, i, j, comp);
  if (m->dbl) ((double *)m->data)[at] = v;
  else ((float *)m->data)[at] = (float)v;
}

void bt_mat_fill_random(bt_mat *m, double scale) {
  for (int j = 0; j < m->outer; ++j)
    for (int i = 0; i < m->inner; ++i)
      for (int c = 0; c < m->ncomp; ++c) bt_mat_set(m, i, j, c, scale * bt_rand_unit());
}

void bt_mat_fill_special(bt_mat *m) {
  const double vals[4] = {NAN, INFINITY, -INFINITY, -NAN};
  size_t t = 0;
  for (int j = 0; j < m->outer; ++j)
    for (int i = 0; i < m->inner; ++i)
      for (int c = 0; c < m->ncomp; ++c) bt_mat_set(m, i, j, c, vals[t++ % 4]);
}

/* Position of the element holding byte `off` of the allocation, relative to
 * the data start (negative inside the leading guard). */
static long elem_at(const bt_mat *m, size_t off) { return (long)(off / m->esize) - GUARD_ELEMS; }

static bool in_valid(const bt_mat *m, long e) {
  if (e < 0 || m->ld <= 0) return false;
  long j = e / m->ld, i = e % m->ld;
  return j < m->outer && i < m->inner;
}

bool bt_mat_padding_intact(const bt_mat *m, const bt_mat *before, const char *what) {
  for (size_t off = 0; off < m->raw_bytes; ++off) {
    if (m->raw[off] == before->raw[off]) continue;
    long e = elem_at(m, off);
    if (in_valid(m, e)) continue;
    fprintf(stderr,
            "  %s: write outside the valid elements at element offset %ld "
            "(inner %d, outer %d, ld %d, %ld elements allocated)\n",
            what, e, m->inner, m->outer, m->ld, (long)data_elems(m));
    return false;
  }
  return true;
}

bool bt_mat_unchanged(const bt_mat *m, const bt_mat *before, const char *what) {
  if (memcmp(m->raw, before->raw, m->raw_bytes) == 0) return true;
  size_t off = 0;
  while (m->raw[off] == before->raw[off]) ++off;
  fprintf(stderr, "  %s: input modified at element offset %ld\n", what, elem_at(m, off));
  return false;
}

/* ---- the application's BLAS error handlers ------------------------------ */

bt_errors bt_err;

void bt_errors_reset(void) { memset(&bt_err, 0, sizeof bt_err); }

void xerbla_(const char *srname, const int *info, int len) {
  /* Reference BLAS passes "SGEMM " and its length; never read past 6
   * characters or a NUL, whatever length arrives. */
  int n = (len > 0 && len < 6) ? len : 6;
  int i = 0;
  for (; i < n && srname[i]; ++i) bt_err.f77_name[i] = srname[i];
  while (i > 0 && bt_err.f77_name[i - 1] == ' ') --i;
  bt_err.f77_name[i] = '\0';
  bt_err.f77_info = *info;
  ++bt_err.f77_calls;
}

void cblas_xerbla(int p, const char *rout, const char *form, ...) {
  (void)form;
  bt_err.cblas_p = p;
  snprintf(bt_err.cblas_rout, sizeof bt_err.cblas_rout, "%s", rout);
  ++bt_err.cblas_calls;
}

/* ---- comparisons -------------------------------------------------------- */

bool bt_close(double got, double want, double bound) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= bound;
}

bool bt_expect_close(const char *what, long idx, double got, double want, double bound) {
  if (bt_close(got, want, bound)) return true;
  fprintf(stderr, "  %s[%ld]: got %.17g, reference %.17g, |diff| %.3g > bound %.3g\n", what, idx, got, want,
          fabs(got - want), bound);
  return false;
}

/* ---- GEMM against the reference ----------------------------------------- */

/* Rounding-error allowance per unit of k; covers the library and the
 * reference each being off by up to the classic k*eps bound. */
#define GEMM_C0 4.0

static bool no_trans(char t) { return toupper((unsigned char)t) == 'N'; }

static CBLAS_TRANSPOSE cblas_trans(char t) {
  switch (toupper((unsigned char)t)) {
    case 'N': return CblasNoTrans;
    case 'T': return CblasTrans;
    default: return CblasConjTrans;
  }
}

/* Storage geometry of operand `which`: `inner` contiguous elements per run,
 * `outer` runs. */
static void gemm_geometry(const bt_gemm_case *gc, char which, int *inner, int *outer) {
  int rows, cols;
  if (which == 'A') {
    rows = no_trans(gc->ta) ? gc->m : gc->k;
    cols = no_trans(gc->ta) ? gc->k : gc->m;
  } else if (which == 'B') {
    rows = no_trans(gc->tb) ? gc->k : gc->n;
    cols = no_trans(gc->tb) ? gc->n : gc->k;
  } else {
    rows = gc->m;
    cols = gc->n;
  }
  bool row_major = gc->api == BT_CBLAS_ROW;
  *inner = row_major ? cols : rows;
  *outer = row_major ? rows : cols;
}

int bt_gemm_min_ld(const bt_gemm_case *gc, char which) {
  int inner, outer;
  gemm_geometry(gc, which, &inner, &outer);
  return inner > 1 ? inner : 1;
}

static int ld_of(const bt_gemm_case *gc, char which) {
  int ld = which == 'A' ? gc->lda : which == 'B' ? gc->ldb : gc->ldc;
  return ld > 0 ? ld : bt_gemm_min_ld(gc, which);
}

void bt_gemm_alloc(const bt_gemm_case *gc, bt_mat *a, bt_mat *b, bt_mat *c) {
  int inner, outer;
  gemm_geometry(gc, 'A', &inner, &outer);
  bt_mat_alloc(a, gc->dbl, 1, inner, outer, ld_of(gc, 'A'));
  gemm_geometry(gc, 'B', &inner, &outer);
  bt_mat_alloc(b, gc->dbl, 1, inner, outer, ld_of(gc, 'B'));
  gemm_geometry(gc, 'C', &inner, &outer);
  bt_mat_alloc(c, gc->dbl, 1, inner, outer, ld_of(gc, 'C'));
}

void bt_gemm_describe(const bt_gemm_case *gc, char *buf, size_t len) {
  static const char *const api_names[] = {"", "cblas_", "cblas_"};
  static const char *const layouts[] = {"", " ColMajor", " RowMajor"};
  snprintf(buf, len,
           "%s%cgemm%s%s transa=%c transb=%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d "
           "alpha=%.9g beta=%.9g%s",
           api_names[gc->api], gc->dbl ? 'd' : 's', gc->api == BT_F77 ? "_" : "", layouts[gc->api], gc->ta, gc->tb,
           gc->m, gc->n, gc->k, ld_of(gc, 'A'), ld_of(gc, 'B'), ld_of(gc, 'C'), gc->alpha, gc->beta,
           gc->c_special ? " C=NaN/Inf" : "");
}

static void run_gemm(const bt_gemm_case *gc, bool reference, const bt_mat *a, const bt_mat *b, bt_mat *c) {
  int m = gc->m, n = gc->n, k = gc->k, lda = a->ld, ldb = b->ld, ldc = c->ld;
  char ta = gc->ta, tb = gc->tb;
  if (gc->api == BT_F77) {
    if (gc->dbl) {
      double al = gc->alpha, be = gc->beta;
      (reference ? BT_REF(dgemm_) : dgemm_)(&ta, &tb, &m, &n, &k, &al, a->data, &lda, b->data, &ldb, &be, c->data,
                                            &ldc);
    } else {
      float al = (float)gc->alpha, be = (float)gc->beta;
      (reference ? BT_REF(sgemm_) : sgemm_)(&ta, &tb, &m, &n, &k, &al, a->data, &lda, b->data, &ldb, &be, c->data,
                                            &ldc);
    }
    return;
  }
  CBLAS_LAYOUT order = gc->api == BT_CBLAS_ROW ? CblasRowMajor : CblasColMajor;
  if (gc->dbl)
    (reference ? BT_REF(cblas_dgemm) : cblas_dgemm)(order, cblas_trans(ta), cblas_trans(tb), m, n, k, gc->alpha,
                                                    a->data, lda, b->data, ldb, gc->beta, c->data, ldc);
  else
    (reference ? BT_REF(cblas_sgemm) : cblas_sgemm)(order, cblas_trans(ta), cblas_trans(tb), m, n, k, (float)gc->alpha,
                                                    a->data, lda, b->data, ldb, (float)gc->beta, c->data, ldc);
}

/* Elementwise |a| in double with the operand's geometry, zero padding. */
static double *abs_copy(const bt_mat *x) {
  size_t n = data_elems(x);
  double *d = calloc(n, sizeof *d);
  if (!d) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (int j = 0; j < x->outer; ++j)
    for (int i = 0; i < x->inner; ++i) d[(size_t)j * x->ld + i] = fabs(bt_mat_get(x, i, j, 0));
  return d;
}

/* sum_l |a_il| |b_lj| in C's storage, computed by the reference dgemm_. A
 * row-major product is the column-major product of the transposes with the
 * operands swapped. */
static double *abs_product(const bt_gemm_case *gc, const bt_mat *a, const bt_mat *b, int ldc, int c_outer) {
  double *aa = abs_copy(a), *ab = abs_copy(b);
  double *s = calloc((size_t)ldc * (size_t)(c_outer ? c_outer : 1), sizeof *s);
  if (!s) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  double one = 1.0, zero = 0.0;
  char ta = no_trans(gc->ta) ? 'N' : 'T', tb = no_trans(gc->tb) ? 'N' : 'T';
  int m = gc->m, n = gc->n, k = gc->k, lda = a->ld, ldb = b->ld;
  if (m > 0 && n > 0) {
    if (gc->api == BT_CBLAS_ROW) BT_REF(dgemm_)(&tb, &ta, &n, &m, &k, &one, ab, &ldb, aa, &lda, &zero, s, &ldc);
    else BT_REF(dgemm_)(&ta, &tb, &m, &n, &k, &one, aa, &lda, ab, &ldb, &zero, s, &ldc);
  }
  free(aa);
  free(ab);
  return s;
}

static void report_failure(const bt_gemm_case *gc, const char *why) {
  char desc[256];
  bt_gemm_describe(gc, desc, sizeof desc);
  fprintf(stderr, "FAIL %s: %s\n", desc, why);
  bt_print_repro();
}

bool bt_gemm_check(const bt_gemm_case *gc) {
  bt_mat a, b, c, a0, b0, c0, cref;
  bt_gemm_alloc(gc, &a, &b, &c);

  bt_mat_fill_random(&a, gc->scale_a > 0 ? gc->scale_a : 1.0);
  bt_mat_fill_random(&b, gc->scale_b > 0 ? gc->scale_b : 1.0);
  if (gc->c_special) bt_mat_fill_special(&c);
  else bt_mat_fill_random(&c, 1.0);
  bt_mat_copy(&a0, &a);
  bt_mat_copy(&b0, &b);
  bt_mat_copy(&c0, &c);
  bt_mat_copy(&cref, &c);

  bt_errors_reset();
  run_gemm(gc, false, &a, &b, &c);
  bt_errors lib_err = bt_err;
  run_gemm(gc, true, &a0, &b0, &cref);

  bool ok = true;
  if (lib_err.f77_calls || lib_err.cblas_calls) {
    fprintf(stderr, "  xerbla_ info %d, cblas_xerbla p %d\n", lib_err.f77_info, lib_err.cblas_p);
    report_failure(gc, "a valid call reported an argument error");
    ok = false;
  }
  if (ok && (!bt_mat_unchanged(&a, &a0, "A") || !bt_mat_unchanged(&b, &b0, "B"))) {
    report_failure(gc, "an input operand was written");
    ok = false;
  }
  if (ok && !bt_mat_padding_intact(&c, &c0, "C")) {
    report_failure(gc, "C written outside its m x n elements");
    ok = false;
  }
  if (ok) {
    double *s = abs_product(gc, &a, &b, c.ld, c.outer);
    double eps = gc->dbl ? DBL_EPSILON : FLT_EPSILON;
    double tiny = gc->dbl ? 16 * DBL_MIN : 16 * FLT_MIN;
    /* Use the operands as the routine saw them, rounded to its precision. */
    double alpha = gc->dbl ? gc->alpha : (float)gc->alpha;
    double beta = gc->dbl ? gc->beta : (float)gc->beta;
    double factor = GEMM_C0 * (gc->k + 2) * eps;
    int shown = 0;
    for (int j = 0; j < c.outer; ++j) {
      for (int i = 0; i < c.inner; ++i) {
        double got = bt_mat_get(&c, i, j, 0), want = bt_mat_get(&cref, i, j, 0);
        double cin = beta == 0.0 ? 0.0 : fabs(beta * bt_mat_get(&c0, i, j, 0));
        double bound = factor * (fabs(alpha) * s[(size_t)j * c.ld + i] + cin) + tiny;
        /* With beta == 0 the result must be finite whatever C held. */
        bool nan_leak = gc->beta == 0.0 && !isfinite(got);
        if (!nan_leak && bt_close(got, want, bound)) continue;
        if (ok) report_failure(gc, "result differs from the reference");
        ok = false;
        if (shown++ < 5)
          fprintf(stderr,
                  "  C(%d,%d) [storage run %d, element %d]: got %.9g, "
                  "reference %.9g, bound %.3g\n",
                  gc->api == BT_CBLAS_ROW ? j : i, gc->api == BT_CBLAS_ROW ? i : j, j, i, got, want, bound);
      }
    }
    if (shown > 5) fprintf(stderr, "  ... %d mismatching elements in all\n", shown);
    free(s);
  }
  bt_mat_free(&a);
  bt_mat_free(&b);
  bt_mat_free(&c);
  bt_mat_free(&a0);
  bt_mat_free(&b0);
  bt_mat_free(&c0);
  bt_mat_free(&cref);
  return ok;
}
