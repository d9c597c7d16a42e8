/* Error reporting and character comparison of the reference BLAS. Kept in a
 * file of their own and called through the PLT, so an application's own
 * xerbla_ takes precedence, as with reference BLAS; one in a module whose
 * dependencies resolve xerbla_ to ours is called from ours. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "shim/common/blas_abi.h"
#include "cblas.h"
#include "shim/common/cblas_state.h"

/* The frame of this thread's xerbla_ that is calling the application's
 * handler. A handler that calls xerbla_ again (ours, through the global
 * scope) runs deeper on the stack and gets our message instead of
 * recursing. An address rather than a flag: a call from no deeper than a
 * recorded frame proves that dispatch over (its handler longjmp'ed out). */
static __thread const char *dispatching_frame;

/* An xerbla_ the application or one of its modules defines gets the report
 * as it would without HCOps (see xerbla_handler.c). Otherwise: the
 * reference xerbla, with netlib CBLAS's twist: an error found by the
 * Fortran check of a CBLAS routine (CBLAS_CallFromC set) is reported as
 * cblas_xerbla(info + 1, "cblas_<routine>", ""), the CBLAS call having one
 * more argument in front. Unlike reference BLAS (STOP), it returns, as
 * OpenBLAS and MKL do: a preloaded library must not end a process that only
 * passed one bad argument; the routine does nothing. */
void xerbla_(const char *srname, const int *info, size_t srname_len) {
  const char *frame = __builtin_frame_address(0);
  if (!dispatching_frame || frame >= dispatching_frame) {
    hcops_xerbla_fn app = hcops_application_xerbla();
    if (app) {
      dispatching_frame = frame;
      app(srname, info, srname_len);
      dispatching_frame = NULL;
      return;
    }
  }
  /* C callers often pass no length: trust it only when plausible. */
  size_t n = (srname_len > 0 && srname_len <= 32) ? srname_len : strnlen(srname, 32);
  while (n > 0 && (srname[n - 1] == ' ' || srname[n - 1] == '\0')) --n;
  if (CBLAS_CallFromC) {
    /* netlib keeps the blank of "SGEMM " ("cblas_sgemm "); we drop it, as
     * its testers' handlers do, so the name is the routine's. */
    char rout[6 + 32 + 1] = "cblas_";
    for (size_t i = 0; i < n; ++i) rout[6 + i] = (char)tolower((unsigned char)srname[i]);
    rout[6 + n] = '\0';
    cblas_xerbla(*info + 1, rout, "");
    return;
  }
  fprintf(stderr, " ** On entry to %.*s parameter number %2d had an illegal value\n", (int)n, srname, *info);
}

void xerbla_array_(const char *srname_array, const int *srname_len, const int *info, size_t unused) {
  char name[33];
  int n = *srname_len < 0 ? 0 : (*srname_len > 32 ? 32 : *srname_len);
  (void)unused;
  memcpy(name, srname_array, (size_t)n);
  name[n] = '\0';
  xerbla_(name, info, (size_t)n);
}

int lsame_(const char *ca, const char *cb, size_t la, size_t lb) {
  unsigned char a = (unsigned char)*ca, b = (unsigned char)*cb;
  (void)la;
  (void)lb;
  if (a >= 'a' && a <= 'z') a = (unsigned char)(a - 'a' + 'A');
  if (b >= 'a' && b <= 'z') b = (unsigned char)(b - 'a' + 'A');
  return a == b;
}
