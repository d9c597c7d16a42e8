/* The trampolines of every BLAS/CBLAS routine forwarded to the reference
 * BLAS (forwarded.def; the table and its description: underlying.c). */
#define HCOPS_FORWARD_TABLE blas
#define HCOPS_FORWARD_DEF "shim/blas/forwarded.def"
#include "shim/common/forward_trampolines.inc"
