/* The CBLAS error handler; an application's own cblas_xerbla takes
 * precedence. Like our xerbla_ it reports and returns (netlib exits). */
#include <stdarg.h>
#include <stdio.h>

#include "cblas.h"

void cblas_xerbla(CBLAS_INT p, const char *rout, const char *form, ...) {
  va_list ap;
  if (p) fprintf(stderr, "Parameter %d to routine %s was incorrect\n", (int)p, rout);
  va_start(ap, form);
  vfprintf(stderr, form, ap);
  va_end(ap);
}
