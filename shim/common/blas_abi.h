/* The Fortran BLAS ABI as called from C (gfortran conventions, LP64): every
 * argument by reference. Callers such as PyTorch pass no hidden string
 * lengths, so HCOps never reads them. */
#ifndef HCOPS_SHIM_BLAS_ABI_H
#define HCOPS_SHIM_BLAS_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void xerbla_(const char *srname, const int *info, size_t srname_len);

/* The xerbla_ the application or one of its modules defines, which errors
 * would reach without HCOps; NULL when there is none (xerbla_handler.c). */
typedef void (*hcops_xerbla_fn)(const char *srname, const int *info, size_t srname_len);
__attribute__((visibility("hidden"))) hcops_xerbla_fn hcops_application_xerbla(void);

/* Reference BLAS argument checks of xGEMM, in reference order: the position
 * of the first bad argument (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda,
 * 10 ldb, 13 ldc), or 0. */
int hcops_gemm_arg_error(char transa, char transb, int m, int n, int k, int lda, int ldb, int ldc);

/* The same checks as OpenBLAS makes them, for its sbgemm_ and cblas_sbgemm
 * (gemm_args.c says how they differ): N, R, T, C in either case. */
int hcops_openblas_gemm_arg_error(char transa, char transb, int m, int n, int k, int lda, int ldb, int ldc);

#ifdef __cplusplus
}
#endif
#endif
