/* What the measuring programs of tools/ and perf/ share: a monotonic clock,
 * medians, and the fixed pseudo-random stream their inputs are drawn from
 * (the same data in every run, so that runs and peers compare). */
#ifndef HCOPS_TOOLS_BENCH_UTIL_H
#define HCOPS_TOOLS_BENCH_UTIL_H

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC, in seconds. */
double bench_now_s(void);

/* qsort comparator of doubles (ascending). */
int bench_cmp_double(const void *a, const void *b);

/* The median of v[0..n), n >= 1; sorts v. An even n gives the mean of the
 * two middle values. */
double bench_median(double *v, int n);

/* The next value of the program's xorshift64* stream, uniform in [lo, hi).
 * One stream per process, from a fixed seed; not thread-safe. */
double bench_uniform(double lo, double hi);

#ifdef __cplusplus
}
#endif
#endif
