/* Argument checking and quick returns of the native GEMM entry points.
 *
 * The recording xerbla_ and cblas_xerbla of blas_test_util.c are this
 * executable's own: the library must call them rather than its built-in
 * handlers, as netlib CBLAS would (see reference_route), and return without
 * touching C when they return. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "blas_test_util.h"

/* ---- invalid arguments --------------------------------------------------- */

/* Large enough for every shape below, so a library that ignored the error
 * would stay in bounds and be caught by the content check instead. */
#define ARENA 256

typedef struct {
  bt_api api;
  int order;  /* CBLAS layout value as passed, possibly invalid */
  int ta, tb; /* Fortran character or CBLAS transpose value */
  int m, n, k, lda, ldb, ldc;
  int expect; /* xerbla_ info / cblas_xerbla p; 0 = valid call */
} arg_case;

static void call_raw(const arg_case *ac, bool dbl, void *a, void *b, void *c) {
  char ta = (char)ac->ta, tb = (char)ac->tb;
  if (ac->api == BT_F77) {
    if (dbl) {
      double al = 1.0, be = 0.5;
      dgemm_(&ta, &tb, &ac->m, &ac->n, &ac->k, &al, a, &ac->lda, b, &ac->ldb, &be, c, &ac->ldc);
    } else {
      float al = 1.0f, be = 0.5f;
      sgemm_(&ta, &tb, &ac->m, &ac->n, &ac->k, &al, a, &ac->lda, b, &ac->ldb, &be, c, &ac->ldc);
    }
  } else if (dbl) {
    cblas_dgemm((CBLAS_LAYOUT)ac->order, (CBLAS_TRANSPOSE)ac->ta, (CBLAS_TRANSPOSE)ac->tb, ac->m, ac->n, ac->k, 1.0, a,
                ac->lda, b, ac->ldb, 0.5, c, ac->ldc);
  } else {
    cblas_sgemm((CBLAS_LAYOUT)ac->order, (CBLAS_TRANSPOSE)ac->ta, (CBLAS_TRANSPOSE)ac->tb, ac->m, ac->n, ac->k, 1.0f, a,
                ac->lda, b, ac->ldb, 0.5f, c, ac->ldc);
  }
}

static void describe(const arg_case *ac, bool dbl, char *buf, size_t len) {
  if (ac->api == BT_F77)
    snprintf(buf, len, "%cgemm_('%c','%c', m=%d, n=%d, k=%d, lda=%d, ldb=%d, ldc=%d)", dbl ? 'd' : 's', ac->ta, ac->tb,
             ac->m, ac->n, ac->k, ac->lda, ac->ldb, ac->ldc);
  else
    snprintf(buf, len,
             "cblas_%cgemm(order=%d, TransA=%d, TransB=%d, M=%d, N=%d, K=%d, lda=%d, "
             "ldb=%d, ldc=%d)",
             dbl ? 'd' : 's', ac->order, ac->ta, ac->tb, ac->m, ac->n, ac->k, ac->lda, ac->ldb, ac->ldc);
}

/* netlib CBLAS's globals, which it clears on return from every call. */
extern int RowMajorStrg, CBLAS_CallFromC;

/* Where the reference delivers the error of `ac` (expect: the position of
 * the bad argument as the caller wrote it). Fortran calls: xerbla_. CBLAS
 * layout/TransA/TransB: cblas_xerbla with that position. Any other CBLAS
 * error is found by the Fortran check of the column-major call actually run
 * (A/B, M/N, lda/ldb swapped for row major) and reaches the application's
 * xerbla_ with that call's position: *want becomes it; returns whether the
 * report goes to xerbla_. */
static bool reference_route(const arg_case *ac, int *want) {
  if (ac->api == BT_F77) return true;
  if (ac->expect <= 3) return false;
  int p = ac->expect;
  if (ac->api == BT_CBLAS_ROW) p = p == 4 ? 5 : p == 5 ? 4 : p == 9 ? 11 : p == 11 ? 9 : p;
  *want = p - 1;
  return true;
}

/* Checks one call; returns false after printing what went wrong. */
static bool check_arg_case(const arg_case *ac, bool dbl) {
  bt_mat a, b, c, a0, b0, c0;
  bt_mat_alloc(&a, dbl, 1, ARENA, 1, ARENA);
  bt_mat_alloc(&b, dbl, 1, ARENA, 1, ARENA);
  bt_mat_alloc(&c, dbl, 1, ARENA, 1, ARENA);
  bt_mat_fill_random(&a, 1.0);
  bt_mat_fill_random(&b, 1.0);
  bt_mat_fill_random(&c, 1.0);
  bt_mat_copy(&a0, &a);
  bt_mat_copy(&b0, &b);
  bt_mat_copy(&c0, &c);
  bt_errors_reset();

  call_raw(ac, dbl, a.data, b.data, c.data);

  char desc[192], want_name[16];
  describe(ac, dbl, desc, sizeof desc);
  bool ok = true;
  int want = ac->expect;
  bool f77 = reference_route(ac, &want);
  int calls = f77 ? bt_err.f77_calls : bt_err.cblas_calls;
  int other_calls = f77 ? bt_err.cblas_calls : bt_err.f77_calls;
  int got = f77 ? bt_err.f77_info : bt_err.cblas_p;
  if (f77) snprintf(want_name, sizeof want_name, "%cGEMM", dbl ? 'D' : 'S');
  else snprintf(want_name, sizeof want_name, "cblas_%cgemm", dbl ? 'd' : 's');
  const char *got_name = f77 ? bt_err.f77_name : bt_err.cblas_rout;

  if (ac->expect == 0) {
    if (calls || other_calls) {
      fprintf(stderr,
              "FAIL %s: valid call reported an error (xerbla_ info %d, "
              "cblas_xerbla p %d)\n",
              desc, bt_err.f77_info, bt_err.cblas_p);
      ok = false;
    }
  } else if (calls != 1 || got != want || strcmp(got_name, want_name) != 0) {
    fprintf(stderr, "FAIL %s: expected one %s call (%s, %d); got %d call(s), last (\"%s\", %d)\n", desc,
            f77 ? "xerbla_" : "cblas_xerbla", want_name, want, calls, got_name, got);
    ok = false;
  } else if (other_calls) {
    fprintf(stderr, "FAIL %s: the error was also reported through %s\n", desc, f77 ? "cblas_xerbla" : "xerbla_");
    ok = false;
  } else if (!bt_mat_unchanged(&c, &c0, "C")) {
    fprintf(stderr, "FAIL %s: C was written despite the error\n", desc);
    ok = false;
  }
  if (RowMajorStrg || CBLAS_CallFromC) {
    fprintf(stderr, "FAIL %s: RowMajorStrg %d, CBLAS_CallFromC %d after the call\n", desc, RowMajorStrg,
            CBLAS_CallFromC);
    ok = false;
  }
  if (!bt_mat_unchanged(&a, &a0, "A") || !bt_mat_unchanged(&b, &b0, "B")) {
    fprintf(stderr, "FAIL %s: an input operand was written\n", desc);
    ok = false;
  }
  bt_mat_free(&a);
  bt_mat_free(&b);
  bt_mat_free(&c);
  bt_mat_free(&a0);
  bt_mat_free(&b0);
  bt_mat_free(&c0);
  return ok;
}

static void run_arg_cases(const arg_case *cases, size_t count) {
  bt_rng_reset("argument checks");
  int failures = 0;
  for (int dbl = 0; dbl < 2; ++dbl)
    for (size_t i = 0; i < count; ++i) failures += !check_arg_case(&cases[i], dbl);
  assert_int_equal(failures, 0);
}

#define ARRAY_LEN(x) (sizeof(x) / sizeof *(x))

/* Baseline op(A) 4x5, op(B) 5x3: every minimum leading dimension differs
 * between the candidates (m=4, n=3, k=5), so a check against the wrong
 * dimension shows. */
static void f77_argument_errors(void **state) {
  (void)state;
  static const arg_case cases[] = {
      /* api  ord ta   tb   m   n   k  lda ldb ldc exp */
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 4, 5, 4, 0},
      {BT_F77, 0, 'n', 't', 4, 3, 5, 4, 3, 4, 0},
      {BT_F77, 0, 'c', 'C', 4, 3, 5, 5, 3, 4, 0},
      {BT_F77, 0, 'T', 'n', 4, 3, 5, 5, 5, 4, 0},
      {BT_F77, 0, 'X', 'N', 4, 3, 5, 4, 5, 4, 1},
      {BT_F77, 0, 'x', 'N', 4, 3, 5, 4, 5, 4, 1},
      {BT_F77, 0, 'R', 'N', 4, 3, 5, 4, 5, 4, 1}, /* OpenBLAS' conj-no-trans */
      {BT_F77, 0, ' ', 'N', 4, 3, 5, 4, 5, 4, 1},
      {BT_F77, 0, 'N', 'X', 4, 3, 5, 4, 5, 4, 2},
      {BT_F77, 0, 'T', 'y', 4, 3, 5, 5, 5, 4, 2},
      {BT_F77, 0, 'N', 'N', -1, 3, 5, 4, 5, 4, 3},
      {BT_F77, 0, 'N', 'N', 4, -1, 5, 4, 5, 4, 4},
      {BT_F77, 0, 'N', 'N', 4, 3, -1, 4, 5, 4, 5},
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 3, 5, 4, 8}, /* lda < m */
      {BT_F77, 0, 'T', 'N', 4, 3, 5, 4, 5, 4, 8}, /* lda < k */
      {BT_F77, 0, 'c', 'N', 4, 3, 5, 4, 5, 4, 8},
      {BT_F77, 0, 'N', 'N', 0, 3, 5, 0, 5, 1, 8},  /* lda < max(1, 0) */
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 4, 4, 4, 10}, /* ldb < k */
      {BT_F77, 0, 'N', 'T', 4, 3, 5, 4, 2, 4, 10}, /* ldb < n */
      {BT_F77, 0, 'N', 'C', 4, 3, 5, 4, 2, 4, 10},
      {BT_F77, 0, 'N', 'N', 4, 3, 0, 4, 0, 4, 10}, /* ldb < max(1, 0) */
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 4, 5, 3, 13}, /* ldc < m */
      {BT_F77, 0, 'N', 'N', 0, 3, 5, 1, 5, 0, 13}, /* ldc < max(1, 0) */
      /* the first failing check in argument order wins */
      {BT_F77, 0, 'X', 'Y', -1, -1, -1, 0, 0, 0, 1},
      {BT_F77, 0, 'N', 'Y', -1, -1, -1, 0, 0, 0, 2},
      {BT_F77, 0, 'N', 'N', -1, -1, -1, 0, 0, 0, 3},
      {BT_F77, 0, 'N', 'N', 4, -1, -1, 0, 0, 0, 4},
      {BT_F77, 0, 'N', 'N', 4, 3, -1, 0, 0, 0, 5},
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 0, 0, 0, 8},
      {BT_F77, 0, 'N', 'N', 4, 3, 5, 4, 0, 0, 10},
  };
  run_arg_cases(cases, ARRAY_LEN(cases));
}

#define COL CblasColMajor
#define ROW CblasRowMajor
#define NT CblasNoTrans
#define TR CblasTrans
#define CT CblasConjTrans

static void cblas_argument_errors(void **state) {
  (void)state;
  static const arg_case cases[] = {
      /* api         order ta  tb  M  N  K lda ldb ldc exp */
      {BT_CBLAS_COL, COL, NT, NT, 4, 3, 5, 4, 5, 4, 0},
      {BT_CBLAS_COL, COL, TR, CT, 4, 3, 5, 5, 3, 4, 0},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, 5, 5, 3, 3, 0},
      {BT_CBLAS_ROW, ROW, CT, TR, 4, 3, 5, 4, 5, 3, 0},
      {BT_CBLAS_COL, 0, NT, NT, 4, 3, 5, 4, 5, 4, 1},
      {BT_CBLAS_COL, 100, NT, NT, 4, 3, 5, 4, 5, 4, 1},
      {BT_CBLAS_COL, 103, NT, NT, -1, 3, 5, 4, 5, 4, 1},
      {BT_CBLAS_COL, COL, 110, NT, 4, 3, 5, 4, 5, 4, 2},
      {BT_CBLAS_COL, COL, 114, NT, 4, 3, 5, 4, 5, 4, 2}, /* OpenBLAS' ConjNoTrans */
      {BT_CBLAS_ROW, ROW, 0, NT, 4, 3, 5, 5, 3, 3, 2},
      {BT_CBLAS_ROW, ROW, 'N', NT, 4, 3, 5, 5, 3, 3, 2},
      {BT_CBLAS_COL, COL, 110, 114, -1, 3, 5, 4, 5, 4, 2},
      {BT_CBLAS_COL, COL, NT, 114, 4, 3, 5, 4, 5, 4, 3},
      {BT_CBLAS_ROW, ROW, NT, 110, 4, 3, 5, 5, 3, 3, 2}, /* netlib's number: 2 */
      {BT_CBLAS_COL, COL, NT, NT, -1, 3, 5, 4, 5, 4, 4},
      {BT_CBLAS_ROW, ROW, NT, NT, -1, 3, 5, 5, 3, 3, 4},
      {BT_CBLAS_COL, COL, NT, NT, 4, -1, 5, 4, 5, 4, 5},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, -1, 5, 5, 3, 3, 5},
      {BT_CBLAS_COL, COL, NT, NT, 4, 3, -1, 4, 5, 4, 6},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, -1, 5, 3, 3, 6},
      /* lda: ColMajor >= (NoTrans ? M : K), RowMajor >= (NoTrans ? K : M) */
      {BT_CBLAS_COL, COL, NT, NT, 4, 3, 5, 3, 5, 4, 9},
      {BT_CBLAS_COL, COL, TR, NT, 4, 3, 5, 4, 5, 4, 9},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, 5, 4, 3, 3, 9},
      {BT_CBLAS_ROW, ROW, TR, NT, 4, 3, 5, 3, 3, 3, 9},
      {BT_CBLAS_ROW, ROW, CT, NT, 4, 3, 5, 3, 3, 3, 9},
      {BT_CBLAS_COL, COL, NT, NT, 0, 3, 5, 0, 5, 1, 9},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, 0, 0, 3, 3, 9},
      /* ldb: ColMajor >= (NoTrans ? K : N), RowMajor >= (NoTrans ? N : K) */
      {BT_CBLAS_COL, COL, NT, NT, 4, 3, 5, 4, 4, 4, 11},
      {BT_CBLAS_COL, COL, NT, TR, 4, 3, 5, 4, 2, 4, 11},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, 5, 5, 2, 3, 11},
      {BT_CBLAS_ROW, ROW, NT, TR, 4, 3, 5, 5, 4, 3, 11},
      {BT_CBLAS_ROW, ROW, NT, CT, 4, 3, 5, 5, 4, 3, 11},
      /* ldc: ColMajor >= M, RowMajor >= N */
      {BT_CBLAS_COL, COL, NT, NT, 4, 3, 5, 4, 5, 3, 14},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 3, 5, 5, 3, 2, 14},
      {BT_CBLAS_ROW, ROW, NT, NT, 4, 0, 5, 5, 1, 0, 14},
  };
  run_arg_cases(cases, ARRAY_LEN(cases));
}

/* ---- quick returns and beta == 0 ---------------------------------------- */

typedef struct {
  bt_mat a, b, c, a0, b0, c0;
  bt_gemm_case gc;
} qr_fixture;

/* Operands shaped for `gc` (padded leading dimensions); A and B hold NaN and
 * Inf so that any use of them when alpha == 0 or k == 0 shows in C. */
static void qr_setup(qr_fixture *f, bt_api api, bool dbl, int m, int n, int k, double alpha, double beta,
                     bool c_special) {
  bt_gemm_case gc = {
      .api = api, .dbl = dbl, .ta = 'N', .tb = 'T', .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta};
  gc.lda = bt_gemm_min_ld(&gc, 'A') + 2;
  gc.ldb = bt_gemm_min_ld(&gc, 'B') + 1;
  gc.ldc = bt_gemm_min_ld(&gc, 'C') + 3;
  f->gc = gc;
  bt_gemm_alloc(&gc, &f->a, &f->b, &f->c);
  bt_mat_fill_special(&f->a);
  bt_mat_fill_special(&f->b);
  if (c_special) {
    bt_mat_fill_special(&f->c);
  } else {
    bt_mat_fill_random(&f->c, 4.0);
    if (f->c.inner > 0 && f->c.outer > 0) bt_mat_set(&f->c, 0, 0, 0, -0.0); /* beta*C+0 would turn it into +0 */
  }
  bt_mat_copy(&f->a0, &f->a);
  bt_mat_copy(&f->b0, &f->b);
  bt_mat_copy(&f->c0, &f->c);
  bt_errors_reset();
}

static void qr_call(qr_fixture *f) {
  const bt_gemm_case *gc = &f->gc;
  if (gc->api == BT_F77) {
    if (gc->dbl)
      dgemm_(&gc->ta, &gc->tb, &gc->m, &gc->n, &gc->k, &gc->alpha, f->a.data, &gc->lda, f->b.data, &gc->ldb, &gc->beta,
             f->c.data, &gc->ldc);
    else {
      float al = (float)gc->alpha, be = (float)gc->beta;
      sgemm_(&gc->ta, &gc->tb, &gc->m, &gc->n, &gc->k, &al, f->a.data, &gc->lda, f->b.data, &gc->ldb, &be, f->c.data,
             &gc->ldc);
    }
    return;
  }
  CBLAS_LAYOUT order = gc->api == BT_CBLAS_ROW ? CblasRowMajor : CblasColMajor;
  if (gc->dbl)
    cblas_dgemm(order, CblasNoTrans, CblasTrans, gc->m, gc->n, gc->k, gc->alpha, f->a.data, gc->lda, f->b.data, gc->ldb,
                gc->beta, f->c.data, gc->ldc);
  else
    cblas_sgemm(order, CblasNoTrans, CblasTrans, gc->m, gc->n, gc->k, (float)gc->alpha, f->a.data, gc->lda, f->b.data,
                gc->ldb, (float)gc->beta, f->c.data, gc->ldc);
}

static void qr_free(qr_fixture *f) {
  bt_mat_free(&f->a);
  bt_mat_free(&f->b);
  bt_mat_free(&f->c);
  bt_mat_free(&f->a0);
  bt_mat_free(&f->b0);
  bt_mat_free(&f->c0);
}

static bool qr_fail(const qr_fixture *f, const char *why) {
  char desc[256];
  bt_gemm_describe(&f->gc, desc, sizeof desc);
  fprintf(stderr, "FAIL %s: %s\n", desc, why);
  return false;
}

/* Common post-conditions: no error reported, inputs and C's padding intact. */
static bool qr_common_ok(const qr_fixture *f) {
  if (bt_err.f77_calls || bt_err.cblas_calls) return qr_fail(f, "a valid call reported an error");
  if (!bt_mat_unchanged(&f->a, &f->a0, "A") || !bt_mat_unchanged(&f->b, &f->b0, "B"))
    return qr_fail(f, "an input operand was written");
  if (!bt_mat_padding_intact(&f->c, &f->c0, "C")) return qr_fail(f, "C written outside its m x n elements");
  return true;
}

enum qr_expect { QR_UNTOUCHED, QR_SCALED };

/* C must stay bit-identical, or become exactly beta*C (beta == 0 giving
 * zeros whatever C held), computed in the routine's precision. */
static bool qr_case(bt_api api, bool dbl, int m, int n, int k, double alpha, double beta, bool c_special,
                    enum qr_expect expect) {
  qr_fixture f;
  qr_setup(&f, api, dbl, m, n, k, alpha, beta, c_special);
  qr_call(&f);
  bool ok = qr_common_ok(&f);
  if (ok && expect == QR_UNTOUCHED && !bt_mat_unchanged(&f.c, &f.c0, "C")) ok = qr_fail(&f, "C must be left untouched");
  for (int j = 0; ok && expect == QR_SCALED && j < f.c.outer; ++j)
    for (int i = 0; ok && i < f.c.inner; ++i) {
      double cin = bt_mat_get(&f.c0, i, j, 0), got = bt_mat_get(&f.c, i, j, 0);
      double want = beta == 0.0 ? 0.0 : dbl ? beta * cin : (float)((float)beta * (float)cin);
      if (!(got == want || (isnan(got) && isnan(want)))) {
        fprintf(stderr, "  C[%d,%d]: input %g, got %g, expected %g\n", i, j, cin, got, want);
        ok = qr_fail(&f, beta == 0.0 ? "C must become exactly zero" : "C must become exactly beta*C");
      }
    }
  qr_free(&f);
  return ok;
}

static void quick_returns(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  int failures = 0;
  for (int api = BT_F77; api <= BT_CBLAS_ROW; ++api)
    for (int dbl = 0; dbl < 2; ++dbl) {
      bt_api ap = (bt_api)api;
      /* m == 0 or n == 0: nothing at all is touched */
      failures += !qr_case(ap, dbl, 0, 7, 5, 1.0, 0.0, true, QR_UNTOUCHED);
      failures += !qr_case(ap, dbl, 6, 0, 5, 1.0, 0.0, true, QR_UNTOUCHED);
      failures += !qr_case(ap, dbl, 0, 0, 0, 0.5, 2.0, false, QR_UNTOUCHED);
      /* alpha == 0 or k == 0, with beta == 1: C untouched */
      failures += !qr_case(ap, dbl, 6, 7, 5, 0.0, 1.0, false, QR_UNTOUCHED);
      failures += !qr_case(ap, dbl, 6, 7, 5, 0.0, 1.0, true, QR_UNTOUCHED);
      failures += !qr_case(ap, dbl, 6, 7, 0, 1.0, 1.0, false, QR_UNTOUCHED);
      failures += !qr_case(ap, dbl, 6, 7, 0, -2.0, 1.0, true, QR_UNTOUCHED);
      /* alpha == 0: C = beta*C, A and B never read */
      failures += !qr_case(ap, dbl, 6, 7, 5, 0.0, 0.5, false, QR_SCALED);
      failures += !qr_case(ap, dbl, 6, 7, 5, 0.0, -1.0, false, QR_SCALED);
      failures += !qr_case(ap, dbl, 9, 5, 3, 0.0, 0.3, false, QR_SCALED);
      /* k == 0: C = beta*C */
      failures += !qr_case(ap, dbl, 6, 7, 0, 1.0, -0.75, false, QR_SCALED);
      /* beta == 0 overwrites NaN/Inf in C */
      failures += !qr_case(ap, dbl, 6, 7, 5, 0.0, 0.0, true, QR_SCALED);
      failures += !qr_case(ap, dbl, 6, 7, 0, 1.0, 0.0, true, QR_SCALED);
      failures += !qr_case(ap, dbl, 33, 17, 0, 1.0, 0.0, true, QR_SCALED);
    }
  assert_int_equal(failures, 0);
}

/* beta == 0 with a real product: C's NaN/Inf must not reach the result. */
static void beta_zero_with_nan_c(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  int failures = 0;
  const int dims[][3] = {{1, 1, 1}, {6, 7, 5}, {37, 29, 41}, {130, 70, 300}};
  for (int api = BT_F77; api <= BT_CBLAS_ROW; ++api)
    for (int dbl = 0; dbl < 2; ++dbl)
      for (size_t d = 0; d < ARRAY_LEN(dims); ++d) {
        bt_gemm_case gc = {.api = (bt_api)api,
                           .dbl = dbl,
                           .ta = 'T',
                           .tb = 'N',
                           .m = dims[d][0],
                           .n = dims[d][1],
                           .k = dims[d][2],
                           .alpha = d % 2 ? 1.0 : -0.625,
                           .beta = 0.0,
                           .c_special = true};
        gc.ldc = bt_gemm_min_ld(&gc, 'C') + 1;
        failures += !bt_gemm_check(&gc);
      }
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f77_argument_errors),
      cmocka_unit_test(cblas_argument_errors),
      cmocka_unit_test(quick_returns),
      cmocka_unit_test(beta_zero_with_nan_c),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
