/* The CBLAS error handler; an application's own cblas_xerbla takes
 * precedence. Like our xerbla_ it reports and returns (netlib exits).
 * As netlib's, it maps the positions of a row-major report back to the
 * caller's: the routine reported those of the swapped column-major call
 * (RowMajorStrg set). Only the routines HCOps runs natively, the gemms,
 * report that way; the others are forwarded whole to the underlying BLAS. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cblas.h"
#include "shim/common/cblas_state.h"

static int caller_position(int p, const char *rout) {
  if (!RowMajorStrg || !strstr(rout, "gemm")) return p;
  switch (p) {
    case 4: return 5; /* M <-> N */
    case 5: return 4;
    case 9: return 11; /* lda <-> ldb */
    case 11: return 9;
    default: return p;
  }
}

void cblas_xerbla(CBLAS_INT p, const char *rout, const char *form, ...) {
  va_list ap;
  int pos = caller_position((int)p, rout);
  if (pos) fprintf(stderr, "Parameter %d to routine %s was incorrect\n", pos, rout);
  va_start(ap, form);
  vfprintf(stderr, form, ap);
  va_end(ap);
}
