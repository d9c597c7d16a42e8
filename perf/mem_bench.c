/* hcops-mem-bench [--quick]: what an allocation costs under whatever malloc the
 * process has (glibc, or an LD_PRELOAD-ed interposer; perf/mem_bench.py runs it
 * under each). Prints one JSON line, all figures in ns:
 *   small     malloc+free pairs of 16 B .. 64 KiB in a tight loop, one thread;
 *   small_2t  the same on two threads at once (per-thread ns per pair);
 *   align64   posix_memalign(64)+free pairs, one thread: PyTorch's CPU
 *             allocator obtains every tensor, however small, this way;
 *   touch     malloc + a write to every page + free, 2 .. 64 MiB;
 *   notouch   malloc + free of the same sizes, nothing touched.
 * Each figure is the median of BATCHES timed batches after one untimed one, so
 * a preempted batch does not count. The order of the tests is fixed: glibc's
 * dynamic mmap threshold depends on what was freed before. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

#define BATCHES 7

static const size_t kSmall[] = {16, 256, 4096, 64 << 10};
static const size_t kLarge[] = {2 << 20, 16 << 20, 64 << 20};
#define COUNT(a) (sizeof(a) / sizeof(a[0]))

static long small_iters = 1L << 21;            /* ~40 ms per batch at 20 ns a pair */
static size_t touch_bytes = (size_t)256 << 20; /* per batch */
static long notouch_iters = 2000;
static size_t page;

/* The pointer escapes into the asm and memory is clobbered, so the compiler
 * can neither elide a malloc/free pair nor drop the stores before free. */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

/* ns per iteration of one batch */
static double small_batch(size_t size, size_t align) {
  const double t0 = 1e9 * bench_now_s();
  for (long i = 0; i < small_iters; ++i) {
    void *p = NULL;
    if (align) {
      if (posix_memalign(&p, align, size)) abort();
    } else {
      p = malloc(size);
    }
    KEEP(p);
    free(p);
  }
  return (1e9 * bench_now_s() - t0) / small_iters;
}

static double large_batch(size_t size, int touch, long iters) {
  const double t0 = 1e9 * bench_now_s();
  for (long i = 0; i < iters; ++i) {
    char *p = malloc(size);
    if (!p) {
      perror("hcops-mem-bench: malloc");
      exit(1);
    }
    if (touch)
      for (size_t o = 0; o < size; o += page) p[o] = 1;
    KEEP(p);
    free(p);
  }
  return (1e9 * bench_now_s() - t0) / iters;
}

static double measure_small(size_t size, size_t align) {
  double t[BATCHES];
  small_batch(size, align);
  for (int b = 0; b < BATCHES; ++b) t[b] = small_batch(size, align);
  return bench_median(t, BATCHES);
}

static double measure_large(size_t size, int touch) {
  const long iters = touch ? (long)(touch_bytes / size > 2 ? touch_bytes / size : 2) : notouch_iters;
  double t[BATCHES];
  large_batch(size, touch, iters);
  for (int b = 0; b < BATCHES; ++b) t[b] = large_batch(size, touch, iters);
  return bench_median(t, BATCHES);
}

/* Two threads allocate at once: the interposer must not add a shared lock or
 * a contended cache line to the small path. */
struct job {
  size_t size;
  double ns;
};
static pthread_barrier_t start;

static void *small_thread(void *arg) {
  struct job *j = arg;
  pthread_barrier_wait(&start);
  j->ns = measure_small(j->size, 0);
  return NULL;
}

static double measure_small_2t(size_t size) {
  struct job j[2] = {{size, 0}, {size, 0}};
  pthread_t th;
  pthread_barrier_init(&start, NULL, 2);
  pthread_create(&th, NULL, small_thread, &j[1]);
  small_thread(&j[0]);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&start);
  return 0.5 * (j[0].ns + j[1].ns);
}

enum test { SMALL, SMALL_2T, ALIGN64, TOUCH, NOTOUCH };
static const char *const kName[] = {"small", "small_2t", "align64", "touch", "notouch"};

static void print_test(enum test t) {
  const size_t *sizes = t <= ALIGN64 ? kSmall : kLarge;
  const size_t n = t <= ALIGN64 ? COUNT(kSmall) : COUNT(kLarge);
  printf("%s\"%s\": {", t ? ", " : "", kName[t]);
  for (size_t i = 0; i < n; ++i) {
    const double ns = t == SMALL      ? measure_small(sizes[i], 0)
                      : t == SMALL_2T ? measure_small_2t(sizes[i])
                      : t == ALIGN64  ? measure_small(sizes[i], 64)
                                      : measure_large(sizes[i], t == TOUCH);
    printf("%s\"%zu\": %.2f", i ? ", " : "", sizes[i], ns);
  }
  printf("}");
  fflush(stdout);
}

int main(int argc, char **argv) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  if (argc > 1 && !strcmp(argv[1], "--quick")) {
    small_iters >>= 3;
    touch_bytes >>= 2;
    notouch_iters >>= 2;
  } else if (argc > 1) {
    fprintf(stderr, "usage: hcops-mem-bench [--quick]\n");
    return 2;
  }
  printf("{");
  for (int t = SMALL; t <= NOTOUCH; ++t) print_test((enum test)t);
  printf("}\n");
  return 0;
}
