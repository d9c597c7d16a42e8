/* Prototypes of the BLAS/CBLAS entry points the tests call.
 *
 * The tests exercise the ABI, not a header: Fortran symbols take every
 * argument by pointer, integers are LP64 `int`, characters are `const char *`
 * and no hidden CHARACTER length is passed (PyTorch passes none, so the
 * library must never read one). COMPLEX functions return by value, as
 * gfortran does.
 *
 * The CBLAS enums come from the project's include/cblas/cblas.h when it is
 * on the include path (the standard netlib definitions otherwise). The
 * prototypes are always declared here too: C accepts a compatible
 * redeclaration, so a project header that drifted from the ABI the tests
 * expect stops the build. The system <cblas.h> is never used: it belongs to
 * whichever BLAS Debian's alternatives currently point at. */
#ifndef HCOPS_TESTS_BLAS_DECLS_H
#define HCOPS_TESTS_BLAS_DECLS_H

#include <stddef.h>

#if defined(__has_include)
#if __has_include(<cblas/cblas.h>)
#include <cblas/cblas.h>
#define BT_HAVE_PROJECT_CBLAS_H 1
#endif
#endif

#ifndef BT_HAVE_PROJECT_CBLAS_H
typedef enum CBLAS_LAYOUT { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_LAYOUT;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;
typedef CBLAS_LAYOUT CBLAS_ORDER;
#define CBLAS_INDEX size_t
#endif

void cblas_sgemm(const CBLAS_LAYOUT layout, const CBLAS_TRANSPOSE transa, const CBLAS_TRANSPOSE transb, const int m,
                 const int n, const int k, const float alpha, const float *a, const int lda, const float *b,
                 const int ldb, const float beta, float *c, const int ldc);
void cblas_dgemm(const CBLAS_LAYOUT layout, const CBLAS_TRANSPOSE transa, const CBLAS_TRANSPOSE transb, const int m,
                 const int n, const int k, const double alpha, const double *a, const int lda, const double *b,
                 const int ldb, const double beta, double *c, const int ldc);
float cblas_sdot(const int n, const float *x, const int incx, const float *y, const int incy);
void cblas_dgemv(const CBLAS_LAYOUT layout, const CBLAS_TRANSPOSE trans, const int m, const int n, const double alpha,
                 const double *a, const int lda, const double *x, const int incx, const double beta, double *y,
                 const int incy);
void cblas_zdotc_sub(const int n, const void *x, const int incx, const void *y, const int incy, void *dotc);
CBLAS_INDEX cblas_isamax(const int n, const float *x, const int incx);
void cblas_xerbla(int p, const char *rout, const char *form, ...);

/* Fortran 77 ABI. */
void xerbla_(const char *srname, const int *info, int len);

void sgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const float *alpha,
            const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
            const int *ldc);
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc);
void cgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const float _Complex *alpha, const float _Complex *a, const int *lda, const float _Complex *b,
            const int *ldb, const float _Complex *beta, float _Complex *c, const int *ldc);
void zgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
            const double _Complex *alpha, const double _Complex *a, const int *lda, const double _Complex *b,
            const int *ldb, const double _Complex *beta, double _Complex *c, const int *ldc);

void saxpy_(const int *n, const float *alpha, const float *x, const int *incx, float *y, const int *incy);
void daxpy_(const int *n, const double *alpha, const double *x, const int *incx, double *y, const int *incy);
float sdot_(const int *n, const float *x, const int *incx, const float *y, const int *incy);
double ddot_(const int *n, const double *x, const int *incx, const double *y, const int *incy);
float snrm2_(const int *n, const float *x, const int *incx);
int isamax_(const int *n, const float *x, const int *incx);
float _Complex cdotu_(const int *n, const float _Complex *x, const int *incx, const float _Complex *y, const int *incy);
double _Complex zdotc_(const int *n, const double _Complex *x, const int *incx, const double _Complex *y,
                       const int *incy);
void drotg_(double *a, double *b, double *c, double *s);

void sgemv_(const char *trans, const int *m, const int *n, const float *alpha, const float *a, const int *lda,
            const float *x, const int *incx, const float *beta, float *y, const int *incy);
void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag, const int *m, const int *n,
            const double *alpha, const double *a, const int *lda, double *b, const int *ldb);
void ssyrk_(const char *uplo, const char *trans, const int *n, const int *k, const float *alpha, const float *a,
            const int *lda, const float *beta, float *c, const int *ldc);

#endif
