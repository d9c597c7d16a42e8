/* hcops-stream [--mib N] [--reps R] [--quick]: the STREAM triad bandwidth
 * a[i] = b[i] + s * c[i] on OMP_NUM_THREADS threads, the memory bound that
 * perf/ops_bench.py reads the operators against. Arrays of N MiB of doubles
 * each (default 128: three times beyond this machine's L3 together), first
 * touched by the threads that use them (static schedule, as STREAM); R
 * timed passes after one untimed. Bytes counted as STREAM counts them: 24
 * per element (read b and c, write a; a write-allocate's read of a is not
 * counted, as in the operators' byte counts). Prints one JSON line with the
 * best and the median pass in GB/s (1e9 bytes/s). Checks every element of
 * the result (exit 1 otherwise), so the figure is of a loop that ran. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

#define PROG "hcops-stream"

/* One triad pass; noinline so that every pass really runs. */
__attribute__((noinline)) static void triad(double *restrict a, const double *restrict b, const double *restrict c,
                                            double s, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
  long mib = 128;
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--quick")) { /* a check that it runs, not a figure */
      mib = 8;
      reps = 3;
    } else {
      fprintf(stderr, "usage: " PROG " [--mib N] [--reps R] [--quick]\n");
      return 2;
    }
  }
  if (mib < 1 || reps < 1) {
    fprintf(stderr, PROG ": --mib and --reps must be positive\n");
    return 2;
  }
  const long n = mib * (1L << 20) / (long)sizeof(double);
  double *a = aligned_alloc(64, n * sizeof(double)), *b = aligned_alloc(64, n * sizeof(double)),
         *c = aligned_alloc(64, n * sizeof(double));
  double *t = malloc(reps * sizeof *t);
  if (!a || !b || !c || !t) {
    fprintf(stderr, PROG ": cannot allocate 3 x %ld MiB\n", mib);
    return 2;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  triad(a, b, c, 3, n);
  for (int r = 0; r < reps; ++r) {
    const double t0 = bench_now_s();
    triad(a, b, c, 3, n);
    t[r] = bench_now_s() - t0;
  }
  for (long i = 0; i < n; ++i)
    if (a[i] != 7) {
      fprintf(stderr, PROG ": a[%ld] = %g after the triad, expected 7\n", i, a[i]);
      return 1;
    }
  qsort(t, reps, sizeof *t, bench_cmp_double);
  const double bytes = 3.0 * sizeof(double) * n;
  printf(
      "{\"threads\": %d, \"mib_per_array\": %ld, \"reps\": %d, \"triad_gbs_best\": %.2f, \"triad_gbs_median\": %.2f}\n",
      omp_get_max_threads(), mib, reps, bytes / t[0] * 1e-9, bytes / t[reps / 2] * 1e-9);
  free(a), free(b), free(c), free(t);
  return 0;
}
