/* hcops-peak [--csv FILE] [--json]: measures this CPU's FMA peak in GFLOPS, per
 * ISA family it supports (avx512 = AVX-512F, avx2 = AVX2+FMA), per precision,
 * on 1..nproc threads, so that GEMM figures can be read as a fraction of what the
 * cores really deliver (turbo, AVX-512 clocks and double-pumping included).
 * Each thread runs CHAINS independent FMA chains: more than latency (4) times
 * throughput (2) so the FMA pipes never wait, few enough to stay in registers
 * (12 + 2 operands fit the 16 ymm of AVX2). Best of REPS runs. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CHAINS 12
#define ITERS (1L << 23) /* ~30 ms per run at this CPU's peak */
#define REPS 5

/* acc = acc * x + y converges to 1 with x, y below: no overflow, no denormals. */
#define FMA_LOOP(name, isa, vec, set1, fmadd, add)                                            \
  __attribute__((target(isa))) static double name(long iters) {                               \
    const vec x = set1(0.999999), y = set1(1e-6);                                             \
    vec acc[CHAINS];                                                                          \
    for (int i = 0; i < CHAINS; ++i) acc[i] = set1(0);                                        \
    for (long it = 0; it < iters; ++it) {                                                     \
      _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i) acc[i] = fmadd(acc[i], x, y); \
    }                                                                                         \
    for (int i = 1; i < CHAINS; ++i) acc[0] = add(acc[0], acc[i]);                            \
    return acc[0][0]; /* keeps the chains live */                                             \
  }

FMA_LOOP(avx512_f32, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
FMA_LOOP(avx512_f64, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd)
FMA_LOOP(avx2_f32, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
FMA_LOOP(avx2_f64, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd)

struct kernel {
  const char *precision;
  int lanes;
  double (*loop)(long);
};
static int has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int has_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
static const struct family {
  const char *isa;
  int (*supported)(void);
  struct kernel k[2];
} families[] = {
    {"avx512", has_avx512, {{"f32", 16, avx512_f32}, {"f64", 8, avx512_f64}}},
    {"avx2", has_avx2, {{"f32", 8, avx2_f32}, {"f64", 4, avx2_f64}}},
};

struct worker {
  pthread_t thread;
  int cpu; /* -1: not pinned */
  const struct kernel *k;
  pthread_barrier_t *start;
  double t0, t1;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static volatile double sink;

static void *work(void *arg) {
  struct worker *w = arg;
  if (w->cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(w->cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one); /* best effort: a container may refuse */
  }
  pthread_barrier_wait(w->start);
  w->t0 = now();
  sink = w->k->loop(ITERS);
  w->t1 = now();
  return NULL;
}

/* Wall time from the first start to the last end: all threads must overlap. */
static double run(const struct kernel *k, int threads, const int *cpus) {
  struct worker w[threads];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, threads);
  for (int i = 0; i < threads; ++i) {
    w[i] = (struct worker){.cpu = cpus[i], .k = k, .start = &start};
    pthread_create(&w[i].thread, NULL, work, &w[i]);
  }
  double t0 = 1e30, t1 = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(w[i].thread, NULL);
    t0 = w[i].t0 < t0 ? w[i].t0 : t0;
    t1 = w[i].t1 > t1 ? w[i].t1 : t1;
  }
  pthread_barrier_destroy(&start);
  return 2.0 * CHAINS * k->lanes * ITERS * threads / (t1 - t0) * 1e-9;
}

int main(int argc, char **argv) {
  const char *csv = NULL;
  int json = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
    else if (!strcmp(argv[i], "--json")) json = 1;
    else {
      fprintf(stderr, "usage: hcops-peak [--csv FILE] [--json]\n");
      return 2;
    }
  }
  cpu_set_t allowed;
  int cpus[CPU_SETSIZE], ncpu = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus[ncpu++] = c;
  } else {
    cpus[ncpu++] = -1;
  }

  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (csv && !out) {
    perror(csv);
    return 2;
  }
  if (out) fprintf(out, "isa,precision,threads,gflops\n");
  if (json) printf("{");
  else printf("%-8s %-9s %7s %9s\n", "isa", "precision", "threads", "GFLOPS");
  int shown = 0;
  for (size_t f = 0; f < sizeof families / sizeof *families; ++f) {
    if (!families[f].supported()) continue;
    if (json) printf("%s\"%s\": {", shown++ ? ", " : "", families[f].isa);
    for (int p = 0; p < 2; ++p) {
      const struct kernel *k = &families[f].k[p];
      if (json) printf("%s\"%s\": {", p ? ", " : "", k->precision);
      for (int t = 1; t <= ncpu; ++t) {
        double best = 0;
        for (int r = 0; r < REPS; ++r) {
          const double g = run(k, t, cpus);
          best = g > best ? g : best;
        }
        if (json) printf("%s\"%d\": %.1f", t > 1 ? ", " : "", t, best);
        else printf("%-8s %-9s %7d %9.1f\n", families[f].isa, k->precision, t, best);
        if (out) fprintf(out, "%s,%s,%d,%.1f\n", families[f].isa, k->precision, t, best);
      }
      if (json) printf("}");
    }
    if (json) printf("}");
  }
  if (json) printf("}\n");
  if (out) fclose(out);
  return 0;
}
