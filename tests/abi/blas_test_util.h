/* Helpers shared by the C test programs: the reference BLAS (loaded with
 * dlopen so it never interposes on the library under test), a reproducible
 * random stream, guarded strided buffers that detect stray writes, and a
 * GEMM runner that compares the library with the reference within a
 * rounding-error bound. Nothing here depends on CMocka, so it can run in a
 * forked child. */
#ifndef HCOPS_TESTS_BLAS_TEST_UTIL_H
#define HCOPS_TESTS_BLAS_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blas_decls.h"

/* ---- reproducible randomness ------------------------------------------ */

/* HCOPS_TEST_SEED (decimal or 0x hex) or a fixed default. */
uint64_t bt_seed(void);
/* Restarts the stream from the seed mixed with `stream`, so each test is
 * reproducible on its own regardless of which tests ran before it. */
void bt_rng_reset(const char *stream);
uint64_t bt_rand_u64(void);
int bt_rand_int(int lo, int hi); /* inclusive */
double bt_rand_unit(void);       /* uniform in [-1, 1) */
bool bt_rand_chance(int percent);

/* One line naming the seed and thread setting, to print with any failure. */
void bt_print_repro(void);

/* ---- reference BLAS ---------------------------------------------------- */

/* HCOPS_TEST_REFERENCE or OpenBLAS's shared object. */
const char *bt_ref_path(void);
typedef void (*bt_fn)(void);
/* Exits the process with a message if the reference or the symbol is
 * missing: a test that cannot compare must not pass. */
bt_fn bt_ref_fn(const char *name);
/* The reference's implementation of `fn`, typed like the library's. */
#define BT_REF(fn) ((__typeof__(&fn))bt_ref_fn(#fn))

/* ---- guarded strided storage ------------------------------------------- */

/* `outer` runs of `inner` valid elements, `ld` elements apart (columns of a
 * column-major matrix, rows of a row-major one, or a vector with stride
 * ld). Everything else in the allocation - the ld gaps, the tail and guard
 * zones on both sides - holds a NaN sentinel that must survive a call. */
typedef struct bt_mat {
  bool dbl;  /* double rather than float components */
  int ncomp; /* 1 real, 2 complex */
  int inner, outer, ld;
  size_t esize;
  unsigned char *raw;
  size_t raw_bytes;
  void *data; /* element (0, 0) */
} bt_mat;

void bt_mat_alloc(bt_mat *m, bool dbl, int ncomp, int inner, int outer, int ld);
void bt_mat_free(bt_mat *m);
void bt_mat_copy(bt_mat *dst, const bt_mat *src); /* allocates dst */
/* Real component `comp` of element (i, j), i < inner, j < outer. */
double bt_mat_get(const bt_mat *m, int i, int j, int comp);
void bt_mat_set(bt_mat *m, int i, int j, int comp, double v);
/* Valid elements uniform in [-scale, scale). */
void bt_mat_fill_random(bt_mat *m, double scale);
/* Valid elements cycle through NaN, +Inf, -Inf, NaN with another payload. */
void bt_mat_fill_special(bt_mat *m);
/* Bytes outside the valid elements equal those of `before` (same shape);
 * otherwise prints where the first stray write is and returns false. */
bool bt_mat_padding_intact(const bt_mat *m, const bt_mat *before, const char *what);
/* The whole allocation is byte-identical to `before`. */
bool bt_mat_unchanged(const bt_mat *m, const bt_mat *before, const char *what);

/* ---- the application's BLAS error handlers ------------------------------ */

/* Every test program defines xerbla_ and cblas_xerbla (in this file). As
 * with reference BLAS, an application's handlers take precedence over the
 * library's, and when they return the routine must return without touching
 * its outputs. They only record: tests inspect bt_err. */
typedef struct bt_errors {
  int f77_calls;
  char f77_name[8]; /* first characters of srname, trailing blanks removed */
  int f77_info;
  int cblas_calls;
  int cblas_p;
  char cblas_rout[32];
} bt_errors;

extern bt_errors bt_err;
void bt_errors_reset(void);

/* ---- comparisons -------------------------------------------------------- */

/* |got - want| <= bound; equal infinities and NaN against NaN also match. */
bool bt_close(double got, double want, double bound);
/* As bt_close, printing `what`, the index and both values on mismatch. */
bool bt_expect_close(const char *what, long idx, double got, double want, double bound);

/* ---- GEMM against the reference ----------------------------------------- */

typedef enum { BT_F77, BT_CBLAS_COL, BT_CBLAS_ROW } bt_api;

typedef struct bt_gemm_case {
  bt_api api;
  bool dbl;
  char ta, tb; /* N/T/C in either case; CBLAS maps to the enum */
  int m, n, k;
  int lda, ldb, ldc; /* 0 = the minimum the API accepts */
  double alpha, beta;
  double scale_a, scale_b; /* magnitude of A and B entries; 0 = 1 */
  bool c_special;          /* C holds NaN/Inf on entry (use with beta == 0) */
} bt_gemm_case;

/* Smallest legal leading dimension of 'A', 'B' or 'C' for the case. */
int bt_gemm_min_ld(const bt_gemm_case *gc, char which);
/* Sentinel-filled operands shaped for the case (see bt_mat_alloc). */
void bt_gemm_alloc(const bt_gemm_case *gc, bt_mat *a, bt_mat *b, bt_mat *c);
void bt_gemm_describe(const bt_gemm_case *gc, char *buf, size_t len);
/* Runs the case on the library and the reference with identical inputs and
 * checks: A and B untouched, nothing written outside C's valid elements, and
 * every element within c0*(k+2)*eps*(|alpha|*sum|a||b| + |beta*c_in|). */
bool bt_gemm_check(const bt_gemm_case *gc);

#endif
