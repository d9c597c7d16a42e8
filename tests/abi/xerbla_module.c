/* A module with its own xerbla_, like numpy's lapack_lite: test_xerbla_module
 * opens it RTLD_LOCAL, so BLAS routines find this xerbla_ only through the
 * module's local scope — behind any library of the global scope (a preloaded
 * libhcops). It makes one bad native call (sgemm_) and one bad forwarded
 * call (strsm_); both reports must arrive here. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);
void strsm_(const char *, const char *, const char *, const char *, const int *, const int *, const float *,
            const float *, const int *, float *, const int *);

static int calls, last_info;
static char last_name[8];

void xerbla_(const char *srname, const int *info, size_t len) {
  size_t n = 0;
  (void)len;
  while (n < 6 && srname[n] && srname[n] != ' ') {
    last_name[n] = srname[n];
    ++n;
  }
  last_name[n] = '\0';
  last_info = *info;
  ++calls;
}

static int expect(const char *call, const char *name, int info) {
  int ok = calls == 1 && last_info == info && strcmp(last_name, name) == 0;
  printf("%s: %s reported to the module's xerbla_ (%d call(s), last %s %d; expected %s %d)\n", ok ? "PASS" : "FAIL",
         call, calls, last_name, last_info, name, info);
  calls = last_info = 0;
  last_name[0] = '\0';
  return !ok;
}

/* Returns the number of failures. */
int xerbla_module_check(void) {
  float a[4] = {0}, b[4] = {0}, c[4] = {0}, alpha = 1.0f, beta = 0.0f;
  const int bad = -1, zero = 0, one = 1;
  int failures = 0;
  sgemm_("N", "N", &bad, &zero, &zero, &alpha, a, &one, b, &one, &beta, c, &one);
  failures += expect("sgemm_(m = -1)", "SGEMM", 3);
  strsm_("X", "U", "N", "N", &zero, &zero, &alpha, a, &one, b, &one);
  failures += expect("strsm_(side = 'X')", "STRSM", 1);
  return failures;
}
