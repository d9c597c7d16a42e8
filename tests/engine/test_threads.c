/* GEMM from a threaded application: several application threads calling at
 * once (each must get its own packing workspace), and calls from inside the
 * application's OpenMP parallel region, which must run serially (one HCOps
 * thread per call, as HCOPS_VERBOSE reports) rather than nest a second team.
 * Run with HCOPS_VERBOSE=1 and HCOPS_NUM_THREADS=2 by test_threads.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);

/* One random product checked against a double-precision loop; 1 if right. */
static int one_gemm(unsigned *seed) {
  const int m = 1 + rand_r(seed) % 160, n = 1 + rand_r(seed) % 160, k = 1 + rand_r(seed) % 160;
  const float alpha = 1, beta = 0;
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
  for (int i = 0; i < m * k; ++i) a[i] = (float)(rand_r(seed) % 17) - 8;
  for (int i = 0; i < k * n; ++i) b[i] = (float)(rand_r(seed) % 13) - 6;
  for (int i = 0; i < m * n; ++i) c[i] = NAN;
  sgemm_("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m);
  int ok = 1;
  for (int j = 0; j < n && ok; ++j)
    for (int i = 0; i < m && ok; ++i) {
      double ref = 0;
      for (int p = 0; p < k; ++p) ref += (double)a[i + p * m] * b[p + j * k];
      ok = c[i + j * m] == (float)ref; /* small integers: every order is exact */
    }
  free(a);
  free(b);
  free(c);
  return ok;
}

static void *worker(void *arg) {
  unsigned seed = (unsigned)(size_t)arg;
  long ok = 1;
  for (int i = 0; i < 40; ++i) ok &= one_gemm(&seed);
  return (void *)ok;
}

static void concurrent_application_threads(void **state) {
  (void)state;
  pthread_t t[4];
  for (size_t i = 0; i < 4; ++i) assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(i + 1)), 0);
  for (size_t i = 0; i < 4; ++i) {
    void *ok;
    pthread_join(t[i], &ok);
    assert_true((long)ok);
  }
}

/* Every exec line written while `fd` captured stderr reports 1 thread. */
static int count_exec_lines(FILE *f, int *parallel) {
  char line[512];
  int n = 0;
  *parallel = 0;
  rewind(f);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "hcops_verbose,exec,sgemm_,", 26) != 0) continue;
    ++n;
    /* field 14 (1-based) is the thread count */
    char *p = line;
    for (int field = 1; field < 14 && p; ++field) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    if (p && atoi(p) != 1) ++*parallel;
  }
  return n;
}

static void calls_inside_parallel_region_run_serially(void **state) {
  (void)state;
  FILE *capture = tmpfile();
  assert_non_null(capture);
  fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(capture), 2);
  int ok = 1;
#pragma omp parallel num_threads(2) reduction(&& : ok)
  {
    unsigned seed = 100 + (unsigned)omp_get_thread_num();
    for (int i = 0; i < 20; ++i) ok = one_gemm(&seed) && ok;
  }
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  assert_true(ok);
  int parallel;
  const int lines = count_exec_lines(capture, &parallel);
  fclose(capture);
  if (lines < 40) fail_msg("expected 40 verbose exec lines (run with HCOPS_VERBOSE=1), got %d", lines);
  if (parallel) fail_msg("%d of %d calls inside a parallel region started their own team", parallel, lines);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(concurrent_application_threads),
      cmocka_unit_test(calls_inside_parallel_region_run_serially),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
