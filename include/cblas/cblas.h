/* CBLAS: the C interface to the BLAS, as exported by libhcops. Source
 * compatible with the netlib CBLAS header (and OpenBLAS's, minus its
 * extensions); LP64 (32-bit int) indices. */
#ifndef HCOPS_CBLAS_H
#define HCOPS_CBLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef CBLAS_INT
#define CBLAS_INT int
#endif
#define CBLAS_INDEX size_t

typedef enum CBLAS_LAYOUT { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_LAYOUT;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;
typedef enum CBLAS_UPLO { CblasUpper = 121, CblasLower = 122 } CBLAS_UPLO;
typedef enum CBLAS_DIAG { CblasNonUnit = 131, CblasUnit = 132 } CBLAS_DIAG;
typedef enum CBLAS_SIDE { CblasLeft = 141, CblasRight = 142 } CBLAS_SIDE;
typedef CBLAS_LAYOUT CBLAS_ORDER; /* the name used before CBLAS 3.x */

void cblas_xerbla(CBLAS_INT p, const char *rout, const char *form, ...);

/* ===== Level 3 (native: sgemm, dgemm) ===== */
void cblas_sgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE TransA, CBLAS_TRANSPOSE TransB, const CBLAS_INT M,
                 const CBLAS_INT N, const CBLAS_INT K, const float alpha, const float *A, const CBLAS_INT lda,
                 const float *B, const CBLAS_INT ldb, const float beta, float *C, const CBLAS_INT ldc);
void cblas_dgemm(CBLAS_LAYOUT layout, CBLAS_TRANSPOSE TransA, CBLAS_TRANSPOSE TransB, const CBLAS_INT M,
                 const CBLAS_INT N, const CBLAS_INT K, const double alpha, const double *A, const CBLAS_INT lda,
                 const double *B, const CBLAS_INT ldb, const double beta, double *C, const CBLAS_INT ldc);

/* HCOPS-CBLAS-PROTOTYPES: every other CBLAS routine follows. */

#ifdef __cplusplus
}
#endif
#endif
