/* cblas_scabs1 / cblas_dcabs1: |Re z| + |Im z|. Native because OpenBLAS, the
 * usual reference, does not export them. */
#include <math.h>

#include "cblas.h"

float cblas_scabs1(const void *z) {
  const float *c = (const float *)z;
  return fabsf(c[0]) + fabsf(c[1]);
}

double cblas_dcabs1(const void *z) {
  const double *c = (const double *)z;
  return fabs(c[0]) + fabs(c[1]);
}
