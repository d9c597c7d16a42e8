/* The underlying BLAS: the library that the BLAS/CBLAS routines HCOps does
 * not implement are forwarded to (the list: forwarded.def; the trampolines:
 * forward_trampolines.S; the search: shim/common/forward.c). In order:
 *   1. HCOPS_UNDERLYING_BLAS=path (HCOPS_REFERENCE_BLAS, its earlier name,
 *      when it is unset);
 *   2. a BLAS already loaded in the process (never a second runtime), even
 *      one loaded RTLD_LOCAL (PyTorch's libblas.so.3 under python);
 *   3. the OpenBLAS found by configure, then netlib's reference.
 * A candidate whose dgemm_ is libhcops itself (installed as the libblas.so.3
 * alternative, opening "libblas.so.3" finds us) is skipped. */
#include "config.h"

#define HCOPS_FORWARD_TABLE blas
#define HCOPS_FORWARD_ENV_ALIAS "HCOPS_REFERENCE_BLAS"
#define HCOPS_FORWARD_DEF "shim/blas/forwarded.def"
#include "shim/common/forward_table.h"

HCOPS_FOREIGN_LIBRARY("underlying BLAS", "HCOPS_UNDERLYING_BLAS", "dgemm_", "a BLAS library such as libopenblas.so.0",
                      HCOPS_DEFAULT_UNDERLYING_BLAS, "libopenblas.so.0", HCOPS_NETLIB_BLAS);

const char *hcops_underlying_blas(void) { return hcops_foreign_path(&HCOPS_FORWARD_LIB); }
/* Its earlier name, still exported. */
const char *hcops_reference_blas(void) __attribute__((alias("hcops_underlying_blas")));
