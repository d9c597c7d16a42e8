/* The two globals through which netlib CBLAS tells error handlers how a
 * report came about. Handlers written for the reference (its default
 * cblas_xerbla, the CBLAS testers', applications') read them, so HCOps
 * defines and exports them under the same names and sets them as the
 * reference does around each native CBLAS call:
 *   CBLAS_CallFromC  1 while a CBLAS routine runs: an xerbla_ reached from it
 *                    reports as cblas_xerbla(info + 1, "cblas_<name>", "");
 *   RowMajorStrg     1 while a CblasRowMajor call runs: the positions given
 *                    to the handlers are those of the swapped column-major
 *                    call, and the handler swaps them back.
 * Both are process-wide plain ints, as in the reference (so as racy as it is
 * when threads report errors concurrently). */
#ifndef HCOPS_SHIM_CBLAS_STATE_H
#define HCOPS_SHIM_CBLAS_STATE_H

#ifdef __cplusplus
extern "C" {
#endif

extern int RowMajorStrg;
extern int CBLAS_CallFromC;

#ifdef __cplusplus
}
#endif
#endif
