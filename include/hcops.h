/* HCOps: our own small C API, beside the BLAS/CBLAS ABI that libhcops exports. */
#ifndef HCOPS_H
#define HCOPS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, "major.minor.patch". */
const char *hcops_version(void);

/* Writes what hcops-info shows: version, CPU features and chosen kernel,
 * topology, the partition for an m x n x k SGEMM, the reference BLAS, and the
 * environment in effect. m, n or k <= 0 omits the partition. */
void hcops_print_info(FILE *out, long m, long n, long k);

/* Path of the reference BLAS that non-GEMM routines forward to, resolving it
 * now if needed; NULL when none could be loaded. */
const char *hcops_reference_blas(void);

#ifdef __cplusplus
}
#endif
#endif
