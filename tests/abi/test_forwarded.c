/* Routines the library forwards to the reference BLAS must give the
 * reference's answer through every calling convention that can go wrong in
 * a trampoline: float and double returns, int and size_t returns, COMPLEX
 * returned by value (gfortran ABI), output through pointers, negative and
 * non-unit strides, padded leading dimensions and character arguments. */
#define _POSIX_C_SOURCE 200809L

#include <complex.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "blas_test_util.h"

/* Part of the netlib CBLAS ABI, absent from OpenBLAS 0.3.21. */
double cblas_dcabs1(const void *z);
float cblas_scabs1(const void *c);

static int reset(void **state) {
  (void)state;
  bt_errors_reset();
  return 0;
}

/* A strided vector of n elements, |inc| apart, as BLAS addresses it: the
 * pointer is the lowest element whatever the sign of inc. */
static void vec_alloc(bt_mat *v, bool dbl, int ncomp, int n, int inc) {
  bt_mat_alloc(v, dbl, ncomp, 1, n, inc == 0 ? 1 : abs(inc));
  bt_mat_fill_random(v, 1.0);
}

static double max_abs(const bt_mat *m) {
  double s = 0.0;
  for (int j = 0; j < m->outer; ++j)
    for (int i = 0; i < m->inner; ++i)
      for (int c = 0; c < m->ncomp; ++c) s = fmax(s, fabs(bt_mat_get(m, i, j, c)));
  return s;
}

/* The library's output `got` against the reference's `want` (both started
 * as `before`): nothing outside the valid elements written, and each valid
 * component within `work` rounding errors of the largest magnitude - a
 * norm-wise bound, as forwarding must not change results at all. */
static bool check_output(const char *what, const bt_mat *got, const bt_mat *want, const bt_mat *before, double work) {
  if (!bt_mat_padding_intact(got, before, what)) return false;
  double eps = got->dbl ? DBL_EPSILON : FLT_EPSILON;
  double bound = work * eps * max_abs(want) + (got->dbl ? DBL_MIN : FLT_MIN);
  long idx = 0;
  for (int j = 0; j < got->outer; ++j)
    for (int i = 0; i < got->inner; ++i)
      for (int c = 0; c < got->ncomp; ++c, ++idx)
        if (!bt_expect_close(what, idx, bt_mat_get(got, i, j, c), bt_mat_get(want, i, j, c), bound)) return false;
  return true;
}

static bool check_scalar(const char *what, double got, double want, double work, double scale, bool dbl) {
  return bt_expect_close(what, 0, got, want, work * (dbl ? DBL_EPSILON : FLT_EPSILON) * scale);
}

static void fail_if_errors_reported(void) {
  if (bt_err.f77_calls || bt_err.cblas_calls)
    fprintf(stderr, "  unexpected argument error: xerbla_(%s, %d) / cblas_xerbla(%s, %d)\n", bt_err.f77_name,
            bt_err.f77_info, bt_err.cblas_rout, bt_err.cblas_p);
  assert_int_equal(bt_err.f77_calls + bt_err.cblas_calls, 0);
}

static const int incs[][2] = {{1, 1}, {2, 3}, {-2, 1}, {3, -2}, {-1, -1}};
#define NINCS ((int)(sizeof incs / sizeof *incs))

/* ---- level 1 ------------------------------------------------------------ */

static void saxpy_strides(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const float alphas[] = {0.75f, 0.0f, -1.0f};
  for (int t = 0; t < NINCS; ++t)
    for (int a = 0; a < 3; ++a) {
      int n = 1001, incx = incs[t][0], incy = incs[t][1];
      bt_mat x, y, x0, y0, yref;
      vec_alloc(&x, false, 1, n, incx);
      vec_alloc(&y, false, 1, n, incy);
      bt_mat_copy(&x0, &x);
      bt_mat_copy(&y0, &y);
      bt_mat_copy(&yref, &y);
      saxpy_(&n, &alphas[a], x.data, &incx, y.data, &incy);
      BT_REF(saxpy_)(&n, &alphas[a], x0.data, &incx, yref.data, &incy);
      if (!bt_mat_unchanged(&x, &x0, "x") || !check_output("y", &y, &yref, &y0, 4))
        fail_msg("saxpy_ n=%d alpha=%g incx=%d incy=%d", n, alphas[a], incx, incy);
      bt_mat_free(&x), bt_mat_free(&y), bt_mat_free(&x0), bt_mat_free(&y0), bt_mat_free(&yref);
    }
  fail_if_errors_reported();
}

static void dot_products(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const int sizes[] = {0, 1, 7, 1000, 4099};
  for (int s = 0; s < 5; ++s)
    for (int t = 0; t < NINCS; ++t) {
      int n = sizes[s], incx = incs[t][0], incy = incs[t][1];
      bt_mat xd, yd, xs, ys;
      vec_alloc(&xd, true, 1, n, incx);
      vec_alloc(&yd, true, 1, n, incy);
      vec_alloc(&xs, false, 1, n, incx);
      vec_alloc(&ys, false, 1, n, incy);
      double d = ddot_(&n, xd.data, &incx, yd.data, &incy);
      double dref = BT_REF(ddot_)(&n, xd.data, &incx, yd.data, &incy);
      float f = sdot_(&n, xs.data, &incx, ys.data, &incy);
      float fref = BT_REF(sdot_)(&n, xs.data, &incx, ys.data, &incy);
      float cf = cblas_sdot(n, xs.data, incx, ys.data, incy);
      float cfref = BT_REF(cblas_sdot)(n, xs.data, incx, ys.data, incy);
      /* Entries are below 1 in magnitude, so n bounds sum |x||y|. */
      bool ok = check_scalar("ddot_", d, dref, 2.0 * (n + 1), n, true) &&
                check_scalar("sdot_", f, fref, 2.0 * (n + 1), n, false) &&
                check_scalar("cblas_sdot", cf, cfref, 2.0 * (n + 1), n, false);
      if (!ok) fail_msg("dot products n=%d incx=%d incy=%d", n, incx, incy);
      bt_mat_free(&xd), bt_mat_free(&yd), bt_mat_free(&xs), bt_mat_free(&ys);
    }
  fail_if_errors_reported();
}

static void complex_dot_products(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const int sizes[] = {0, 1, 513};
  for (int s = 0; s < 3; ++s)
    for (int t = 0; t < NINCS; ++t) {
      int n = sizes[s], incx = incs[t][0], incy = incs[t][1];
      bt_mat xz, yz, xc, yc;
      vec_alloc(&xz, true, 2, n, incx);
      vec_alloc(&yz, true, 2, n, incy);
      vec_alloc(&xc, false, 2, n, incx);
      vec_alloc(&yc, false, 2, n, incy);
      double _Complex z = zdotc_(&n, xz.data, &incx, yz.data, &incy);
      double _Complex zref = BT_REF(zdotc_)(&n, xz.data, &incx, yz.data, &incy);
      float _Complex c = cdotu_(&n, xc.data, &incx, yc.data, &incy);
      float _Complex cref = BT_REF(cdotu_)(&n, xc.data, &incx, yc.data, &incy);
      double _Complex zs = 0, zsref = 0;
      cblas_zdotc_sub(n, xz.data, incx, yz.data, incy, &zs);
      BT_REF(cblas_zdotc_sub)(n, xz.data, incx, yz.data, incy, &zsref);
      double w = 4.0 * (n + 1), sc = 2.0 * n;
      bool ok = check_scalar("zdotc_ re", creal(z), creal(zref), w, sc, true) &&
                check_scalar("zdotc_ im", cimag(z), cimag(zref), w, sc, true) &&
                check_scalar("cdotu_ re", crealf(c), crealf(cref), w, sc, false) &&
                check_scalar("cdotu_ im", cimagf(c), cimagf(cref), w, sc, false) &&
                check_scalar("cblas_zdotc_sub re", creal(zs), creal(zsref), w, sc, true) &&
                check_scalar("cblas_zdotc_sub im", cimag(zs), cimag(zsref), w, sc, true);
      if (!ok) fail_msg("complex dot products n=%d incx=%d incy=%d", n, incx, incy);
      bt_mat_free(&xz), bt_mat_free(&yz), bt_mat_free(&xc), bt_mat_free(&yc);
    }
  fail_if_errors_reported();
}

static void snrm2_scaling(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  /* Extreme magnitudes need the reference's scaling to avoid over/underflow. */
  const double scales[] = {1.0, 1e-30, 1e30};
  const int sizes[] = {0, 1, 1000};
  for (int s = 0; s < 3; ++s)
    for (int k = 0; k < 3; ++k)
      for (int inc = 1; inc <= 3; inc += 2) {
        int n = sizes[s];
        bt_mat x;
        bt_mat_alloc(&x, false, 1, 1, n, inc);
        bt_mat_fill_random(&x, scales[k]);
        float got = snrm2_(&n, x.data, &inc);
        float want = BT_REF(snrm2_)(&n, x.data, &inc);
        if (!check_scalar("snrm2_", got, want, 2.0 * (n + 1), want, false))
          fail_msg("snrm2_ n=%d inc=%d scale=%g", n, inc, scales[k]);
        bt_mat_free(&x);
      }
  fail_if_errors_reported();
}

static void isamax_indices(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const int sizes[] = {0, 1, 2, 17, 1000};
  const int xincs[] = {1, 2, 5, 0, -1};
  for (int s = 0; s < 5; ++s)
    for (int t = 0; t < 5; ++t) {
      int n = sizes[s], inc = xincs[t];
      bt_mat x;
      vec_alloc(&x, false, 1, n, inc);
      if (n > 2) { /* a tie: the first largest |x| wins, sign ignored */
        bt_mat_set(&x, 0, n / 3, 0, -7.0);
        bt_mat_set(&x, 0, n - 1, 0, 7.0);
      }
      int got = isamax_(&n, x.data, &inc);
      int want = BT_REF(isamax_)(&n, x.data, &inc);
      size_t cgot = cblas_isamax(n, x.data, inc);
      size_t cwant = BT_REF(cblas_isamax)(n, x.data, inc);
      if (got != want || cgot != cwant)
        fail_msg(
            "isamax n=%d inc=%d: isamax_ %d (reference %d), cblas_isamax %zu "
            "(reference %zu)",
            n, inc, got, want, cgot, cwant);
      bt_mat_free(&x);
    }
  fail_if_errors_reported();
}

static void drotg_cases(void **state) {
  (void)state;
  /* Magnitudes where OpenBLAS 0.3.21 and netlib agree: OpenBLAS does not
   * scale, so r overflows for |a| ~ 1e200 and underflows for 1e-300. */
  const double ab[][2] = {{0, 0},  {1, 0},          {0, 1},           {3, 4},      {-3, 4},
                          {3, -4}, {1e150, 1e-150}, {1e-150, 1e-150}, {-2.5, 7.25}};
  for (size_t i = 0; i < sizeof ab / sizeof *ab; ++i) {
    double a = ab[i][0], b = ab[i][1], c = -9, s = -9;
    double ra = ab[i][0], rb = ab[i][1], rc = -9, rs = -9;
    drotg_(&a, &b, &c, &s);
    BT_REF(drotg_)(&ra, &rb, &rc, &rs);
    bool ok = check_scalar("drotg_ r", a, ra, 4, fabs(ra), true) &&
              check_scalar("drotg_ z", b, rb, 4, fabs(rb), true) && check_scalar("drotg_ c", c, rc, 4, 1, true) &&
              check_scalar("drotg_ s", s, rs, 4, 1, true);
    if (!ok) fail_msg("drotg_(a=%g, b=%g)", ab[i][0], ab[i][1]);
  }
  fail_if_errors_reported();
}

/* Checked against the definition (|re| + |im|): OpenBLAS, the usual
 * reference, lacks both, so forwarding alone cannot provide them. */
static void cblas_cabs1_values(void **state) {
  (void)state;
  double z[2] = {-1.5, 2.25};
  float c[2] = {3.5f, -0.25f};
  assert_true(cblas_dcabs1(z) == 3.75);
  assert_true(cblas_scabs1(c) == 3.75f);
}

/* ---- level 2 ------------------------------------------------------------ */

static void sgemv_transposes_strides(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const char trans[] = {'N', 'T', 'C', 'n', 't'};
  const int shapes[][2] = {{37, 53}, {1, 64}, {300, 1}, {0, 5}, {129, 257}};
  for (int sh = 0; sh < 5; ++sh)
    for (int t = 0; t < 5; ++t) {
      int m = shapes[sh][0], n = shapes[sh][1], lda = (m > 1 ? m : 1) + 3;
      int incx = incs[t][0], incy = incs[t][1];
      bool nt = trans[t] == 'N' || trans[t] == 'n';
      int lx = nt ? n : m, ly = nt ? m : n;
      float alpha = 1.5f, beta = t % 2 ? 0.0f : -0.5f;
      bt_mat a, x, y, y0, yref;
      bt_mat_alloc(&a, false, 1, m, n, lda);
      bt_mat_fill_random(&a, 1.0);
      vec_alloc(&x, false, 1, lx, incx);
      vec_alloc(&y, false, 1, ly, incy);
      bt_mat_copy(&y0, &y);
      bt_mat_copy(&yref, &y);
      sgemv_(&trans[t], &m, &n, &alpha, a.data, &lda, x.data, &incx, &beta, y.data, &incy);
      BT_REF(sgemv_)(&trans[t], &m, &n, &alpha, a.data, &lda, x.data, &incx, &beta, yref.data, &incy);
      if (!check_output("y", &y, &yref, &y0, 4.0 * (lx + 2)))
        fail_msg("sgemv_('%c') m=%d n=%d lda=%d incx=%d incy=%d", trans[t], m, n, lda, incx, incy);
      bt_mat_free(&a), bt_mat_free(&x), bt_mat_free(&y), bt_mat_free(&y0), bt_mat_free(&yref);
    }
  fail_if_errors_reported();
}

static void cblas_dgemv_layouts(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const CBLAS_LAYOUT layouts[] = {CblasRowMajor, CblasColMajor};
  const CBLAS_TRANSPOSE trans[] = {CblasNoTrans, CblasTrans, CblasConjTrans};
  for (int l = 0; l < 2; ++l)
    for (int t = 0; t < 3; ++t) {
      int m = 41, n = 23, incx = incs[t + 1][0], incy = incs[t + 1][1];
      bool row = layouts[l] == CblasRowMajor;
      int lda = (row ? n : m) + 5;
      int lx = trans[t] == CblasNoTrans ? n : m, ly = trans[t] == CblasNoTrans ? m : n;
      bt_mat a, x, y, y0, yref;
      bt_mat_alloc(&a, true, 1, row ? n : m, row ? m : n, lda);
      bt_mat_fill_random(&a, 1.0);
      vec_alloc(&x, true, 1, lx, incx);
      vec_alloc(&y, true, 1, ly, incy);
      bt_mat_copy(&y0, &y);
      bt_mat_copy(&yref, &y);
      cblas_dgemv(layouts[l], trans[t], m, n, 0.5, a.data, lda, x.data, incx, 2.0, y.data, incy);
      BT_REF(cblas_dgemv)(layouts[l], trans[t], m, n, 0.5, a.data, lda, x.data, incx, 2.0, yref.data, incy);
      if (!check_output("y", &y, &yref, &y0, 4.0 * (lx + 2)))
        fail_msg("cblas_dgemv layout=%d trans=%d", layouts[l], trans[t]);
      bt_mat_free(&a), bt_mat_free(&x), bt_mat_free(&y), bt_mat_free(&y0), bt_mat_free(&yref);
    }
  fail_if_errors_reported();
}

/* ---- level 3 ------------------------------------------------------------ */

static void dtrsm_all_variants(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const char *const side = "LR", *const uplo = "UL", *const trans = "NTC", *const diag = "NU";
  int m = 23, n = 17, ldb = m + 2;
  for (int v = 0; v < 2 * 2 * 3 * 2; ++v) {
    char sd = side[v % 2], ul = uplo[v / 2 % 2], tr = trans[v / 4 % 3], dg = diag[v / 12];
    int na = sd == 'L' ? m : n, lda = na + 3;
    double alpha = v % 3 ? 1.0 : -0.75;
    bt_mat a, b, a0, b0, bref;
    bt_mat_alloc(&a, true, 1, na, na, lda);
    bt_mat_fill_random(&a, 1.0);
    /* Diagonally dominant: well conditioned, so results agree closely. */
    for (int i = 0; i < na; ++i) bt_mat_set(&a, i, i, 0, na + 1.0 + bt_rand_unit());
    bt_mat_alloc(&b, true, 1, m, n, ldb);
    bt_mat_fill_random(&b, 1.0);
    bt_mat_copy(&a0, &a);
    bt_mat_copy(&b0, &b);
    bt_mat_copy(&bref, &b);
    dtrsm_(&sd, &ul, &tr, &dg, &m, &n, &alpha, a.data, &lda, b.data, &ldb);
    BT_REF(dtrsm_)(&sd, &ul, &tr, &dg, &m, &n, &alpha, a0.data, &lda, bref.data, &ldb);
    if (!bt_mat_unchanged(&a, &a0, "A") || !check_output("B", &b, &bref, &b0, 8.0 * na))
      fail_msg("dtrsm_('%c','%c','%c','%c') m=%d n=%d", sd, ul, tr, dg, m, n);
    bt_mat_free(&a), bt_mat_free(&b), bt_mat_free(&a0), bt_mat_free(&b0), bt_mat_free(&bref);
  }
  fail_if_errors_reported();
}

static void ssyrk_triangles(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const char *const uplo = "UlLu", *const trans = "NTtC";
  int n = 29, k = 41, ldc = n + 4;
  for (int v = 0; v < 16; ++v) {
    char ul = uplo[v % 4], tr = trans[v / 4];
    bool nt = tr == 'N';
    int lda = (nt ? n : k) + 1;
    float alpha = 0.5f, beta = v % 2 ? 1.0f : 0.0f;
    bt_mat a, c, c0, cref;
    bt_mat_alloc(&a, false, 1, nt ? n : k, nt ? k : n, lda);
    bt_mat_fill_random(&a, 1.0);
    bt_mat_alloc(&c, false, 1, n, n, ldc);
    bt_mat_fill_random(&c, 1.0);
    bt_mat_copy(&c0, &c);
    bt_mat_copy(&cref, &c);
    ssyrk_(&ul, &tr, &n, &k, &alpha, a.data, &lda, &beta, c.data, &ldc);
    BT_REF(ssyrk_)(&ul, &tr, &n, &k, &alpha, a.data, &lda, &beta, cref.data, &ldc);
    /* The other triangle is compared too: both must leave it as it was. */
    if (!check_output("C", &c, &cref, &c0, 4.0 * (k + 2)))
      fail_msg("ssyrk_('%c','%c') n=%d k=%d beta=%g", ul, tr, n, k, beta);
    bt_mat_free(&a), bt_mat_free(&c), bt_mat_free(&c0), bt_mat_free(&cref);
  }
  fail_if_errors_reported();
}

/* Conjugate transposes are where complex GEMM differs from real. */
static void complex_gemm(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  const char *const trans = "NTCc";
  int m = 19, n = 23, k = 31;
  for (int dbl = 0; dbl < 2; ++dbl)
    for (int v = 0; v < 16; ++v) {
      char ta = trans[v % 4], tb = trans[v / 4];
      bool nta = ta == 'N', ntb = tb == 'N';
      int lda = (nta ? m : k) + 2, ldb = (ntb ? k : n) + 1, ldc = m + 3;
      bt_mat a, b, c, c0, cref;
      bt_mat_alloc(&a, dbl, 2, nta ? m : k, nta ? k : m, lda);
      bt_mat_alloc(&b, dbl, 2, ntb ? k : n, ntb ? n : k, ldb);
      bt_mat_alloc(&c, dbl, 2, m, n, ldc);
      bt_mat_fill_random(&a, 1.0);
      bt_mat_fill_random(&b, 1.0);
      bt_mat_fill_random(&c, 1.0);
      bt_mat_copy(&c0, &c);
      bt_mat_copy(&cref, &c);
      if (dbl) {
        double _Complex al = 0.5 - 1.25 * I, be = v % 2 ? 0.0 : -0.5 + 0.25 * I;
        zgemm_(&ta, &tb, &m, &n, &k, &al, a.data, &lda, b.data, &ldb, &be, c.data, &ldc);
        BT_REF(zgemm_)(&ta, &tb, &m, &n, &k, &al, a.data, &lda, b.data, &ldb, &be, cref.data, &ldc);
      } else {
        float _Complex al = 0.5f - 1.25f * I, be = v % 2 ? 0.0f : -0.5f + 0.25f * I;
        cgemm_(&ta, &tb, &m, &n, &k, &al, a.data, &lda, b.data, &ldb, &be, c.data, &ldc);
        BT_REF(cgemm_)(&ta, &tb, &m, &n, &k, &al, a.data, &lda, b.data, &ldb, &be, cref.data, &ldc);
      }
      if (!check_output("C", &c, &cref, &c0, 8.0 * (k + 2)))
        fail_msg("%cgemm_('%c','%c') m=%d n=%d k=%d", dbl ? 'z' : 'c', ta, tb, m, n, k);
      bt_mat_free(&a), bt_mat_free(&b), bt_mat_free(&c), bt_mat_free(&c0), bt_mat_free(&cref);
    }
  fail_if_errors_reported();
}

int main(void) {
  printf("# test_forwarded: seed 0x%llx, reference %s\n", (unsigned long long)bt_seed(), bt_ref_path());
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(saxpy_strides, reset),        cmocka_unit_test_setup(dot_products, reset),
      cmocka_unit_test_setup(complex_dot_products, reset), cmocka_unit_test_setup(snrm2_scaling, reset),
      cmocka_unit_test_setup(isamax_indices, reset),       cmocka_unit_test_setup(drotg_cases, reset),
      cmocka_unit_test_setup(cblas_cabs1_values, reset),   cmocka_unit_test_setup(sgemv_transposes_strides, reset),
      cmocka_unit_test_setup(cblas_dgemv_layouts, reset),  cmocka_unit_test_setup(dtrsm_all_variants, reset),
      cmocka_unit_test_setup(ssyrk_triangles, reset),      cmocka_unit_test_setup(complex_gemm, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
