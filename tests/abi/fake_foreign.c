/* A stand-in for a foreign library, for the forwarder's own test
 * (test_forwarder.c): built as several copies that differ in FAKE_ID, so the
 * test sees which copy a forwarded call reached. fake_missing, listed in
 * fake_foreign.def, is deliberately absent. FAKE_FILLER builds an unrelated
 * library (no fake_* symbols) to crowd the process; FAKE_IS_HCOPS a copy that
 * carries HCOps's marker, as HCOps installed under the foreign soname would. */
#include <stdarg.h>

#ifdef FAKE_FILLER
int fake_filler(void) { return 0; }
#else
#ifdef FAKE_IS_HCOPS
const char *hcops_version(void) { return "fake"; }
#endif

int fake_probe(void) { return FAKE_ID; }

int fake_add(int a, int b) { return a + b; }

double fake_fma(double a, double b, double c) { return a * b + c; }

/* Variadic: a trampoline must keep rax, the count of vector registers used. */
double fake_sum(int n, ...) {
  va_list ap;
  double s = 0;
  va_start(ap, n);
  for (int i = 0; i < n; ++i) s += va_arg(ap, double);
  va_end(ap);
  return s;
}

/* Eight integers: the last two on the stack. */
long fake_stack(long a, long b, long c, long d, long e, long f, long g, long h) {
  return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
#endif
