/* The bounds of libhcops_mem's reuse cache (src/mem/cache.h), through the
 * counters of hcops_mem_stat:
 *   bound   cached + live bytes stay within the process's peak of live bytes
 *           plus max(peak / 8, 32 MiB), even when the program goes on with
 *           sizes the cache cannot serve (run with HCOPS_MEM_CACHE=1G, so
 *           that the absolute cap is not what holds);
 *   loop    a training loop (weights kept, activations, a temporary and
 *           gradients of several sizes, live at different moments) takes
 *           every block of every step after the first from the cache, and
 *           nothing is evicted once it runs;
 *   decay1  HCOPS_MEM_CACHE_DECAY=1: a block idle for 2 s is unmapped at the
 *           next allocation instead of being reused;
 *   decay0  HCOPS_MEM_CACHE_DECAY=0: a freed block is unmapped at once;
 *   never   HCOPS_MEM_CACHE_DECAY=never: a block idle for 2 s is reused;
 *   off     HCOPS_MEM_CACHE=0: nothing kept, nothing reused or evicted.
 * test_mem_cache.sh runs each in a process of its own, with its setting.
 * Linked against libhcops_mem, as an application using -lhcops_mem; no
 * timing: the sleeps are twice the decay time and only make blocks older. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hcops.h"

#define MiB ((size_t)1 << 20)

/* Keeps the compiler from pairing and eliding a malloc and its free. */
static void *volatile sink;

static size_t st(const char *name) {
  const size_t v = hcops_mem_stat(name);
  if (v == SIZE_MAX) fail_msg("hcops_mem_stat(\"%s\") does not know the counter", name);
  return v;
}

static void *get(size_t n) {
  void *p = malloc(n);
  assert_non_null(p);
  sink = p;
  return p;
}

/* cached + live within the peak of live and its margin (cache.h). */
static void assert_bounded(const char *when) {
  const size_t peak = st("peak"), live = st("live"), cached = st("cached");
  const size_t margin = peak / 8 > 32 * MiB ? peak / 8 : 32 * MiB;
  if (cached + live > peak + margin)
    fail_msg("%s: cached %zu MiB + live %zu MiB > peak %zu MiB + margin %zu MiB", when, cached / MiB, live / MiB,
             peak / MiB, margin / MiB);
}

/* 256 MiB in 16 MiB blocks, freed: all cached (the program had them live).
 * Then 16 blocks of 11 MiB, which no 16 MiB block serves (more than an
 * eighth wasted): without the bound the cache would keep the 256 MiB beside
 * the new 176 MiB. The untouched blocks cost address space only. */
static void bound(void **state) {
  (void)state;
  enum { N = 16 };
  void *big[N], *other[N];
  const size_t cached0 = st("cached"), cap0 = st("cache_evictions.cap");
  for (int i = 0; i < N; ++i) big[i] = get(16 * MiB);
  for (int i = 0; i < N; ++i) free(big[i]);
  assert_int_equal(st("cached"), cached0 + N * 16 * MiB);
  assert_bounded("after freeing the 16 MiB blocks");
  for (int i = 0; i < N; ++i) {
    other[i] = get(11 * MiB);
    assert_bounded("allocating 11 MiB blocks");
  }
  assert_true(st("cache_evictions.cap") > cap0);
  for (int i = 0; i < N; ++i) free(other[i]);
  assert_bounded("after freeing the 11 MiB blocks");
  /* What is left is still reused. */
  const size_t hits = st("cache_hits");
  free(get(11 * MiB));
  assert_int_equal(st("cache_hits"), hits + 1);
}

/* One training step: weights w stay; activations of two sizes, a temporary
 * live only in the middle, gradients of the weights' size allocated as the
 * activations go. Returns the allocations it made. */
static int step(void) {
  void *a[4], *g[3];
  const size_t act[4] = {6 * MiB, 6 * MiB, 12 * MiB, 12 * MiB};
  for (int i = 0; i < 4; ++i) a[i] = get(act[i]);
  free(get(20 * MiB)); /* the temporary */
  assert_bounded("forward");
  free(a[3]);
  free(a[2]);
  g[0] = get(8 * MiB);
  free(a[1]);
  free(a[0]);
  g[1] = get(8 * MiB);
  g[2] = get(8 * MiB);
  assert_bounded("backward");
  for (int i = 0; i < 3; ++i) free(g[i]);
  return 8;
}

static void loop(void **state) {
  (void)state;
  void *w[3];
  for (int i = 0; i < 3; ++i) w[i] = get(8 * MiB);
  step();
  const size_t cap0 = st("cache_evictions.cap"), decay0 = st("cache_evictions.decay");
  for (int s = 2; s <= 6; ++s) {
    const size_t hits = st("cache_hits");
    const int made = step();
    if (st("cache_hits") != hits + (size_t)made)
      fail_msg("step %d: %zu of %d allocations from the cache", s, st("cache_hits") - hits, made);
  }
  assert_int_equal(st("cache_evictions.cap"), cap0);
  assert_int_equal(st("cache_evictions.decay"), decay0);
  for (int i = 0; i < 3; ++i) free(w[i]);
}

static void decay1(void **state) {
  (void)state;
  const size_t n = 9 * MiB;
  free(get(n));
  assert_true(st("cached") >= n); /* freed just now: kept */
  const size_t hits = st("cache_hits"), decayed = st("cache_evictions.decay");
  sleep(2);
  void *p = get(n); /* the next allocation releases what is idle, first */
  assert_int_equal(st("cache_hits"), hits);
  assert_int_equal(st("cache_evictions.decay"), decayed + 1);
  assert_int_equal(st("cached"), 0);
  free(p);
}

static void decay0(void **state) {
  (void)state;
  const size_t hits = st("cache_hits"), decayed = st("cache_evictions.decay");
  free(get(9 * MiB));
  assert_int_equal(st("cached"), 0);
  assert_int_equal(st("cache_evictions.decay"), decayed + 1);
  free(get(9 * MiB));
  assert_int_equal(st("cache_hits"), hits);
}

static void never(void **state) {
  (void)state;
  const size_t hits = st("cache_hits");
  free(get(9 * MiB));
  sleep(2);
  free(get(9 * MiB));
  assert_int_equal(st("cache_hits"), hits + 1);
  assert_int_equal(st("cache_evictions.decay"), 0);
}

static void off(void **state) {
  (void)state;
  for (int i = 0; i < 3; ++i) free(get(9 * MiB));
  assert_int_equal(st("cached"), 0);
  assert_int_equal(st("cache_hits"), 0);
  assert_int_equal(st("cache_evictions.cap"), 0);
  assert_int_equal(st("cache_evictions.decay"), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bound),  cmocka_unit_test(loop),  cmocka_unit_test(decay1),
      cmocka_unit_test(decay0), cmocka_unit_test(never), cmocka_unit_test(off),
  };
  for (size_t i = 0; argc == 2 && i < sizeof tests / sizeof tests[0]; ++i)
    if (!strcmp(argv[1], tests[i].name)) {
      const struct CMUnitTest one[] = {tests[i]};
      return cmocka_run_group_tests_name(argv[1], one, NULL, NULL);
    }
  fprintf(stderr, "usage: test_mem_cache bound|loop|decay1|decay0|never|off\n");
  return 2;
}
