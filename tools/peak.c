/* hcops-peak [--csv FILE] [--json]: measures this CPU's arithmetic peak in
 * GFLOPS, per ISA family it supports (avx512 = AVX-512F, avx2 = AVX2+FMA,
 * avx512_bf16 = vdpbf16ps, amx = AMX-BF16 tdpbf16ps), per precision, on
 * 1..nproc threads, so that GEMM figures can be read as a fraction of what the
 * cores really deliver (turbo, AVX-512 clocks and double-pumping included).
 * Each thread runs CHAINS independent FMA chains: more than latency (4) times
 * throughput (2) so the FMA pipes never wait, few enough to stay in registers
 * (12 + 2 operands fit the 16 ymm of AVX2). Best of REPS runs, taken in
 * rounds over every loop and thread count rather than REPS in a row: on a
 * guest whose host now and then gives two vCPUs one core's time for a
 * while (a 2-core Zen 4 guest: 2-thread figures of 116-234 GFLOPS where
 * the core pair gives 230-456), five runs in a row could all fall in such
 * a spell, and a peak half the machine's was then cached by hcops-prof for
 * the rest of the boot. Spread over the whole measurement, a cell's runs
 * are less likely all to meet one spell; what removed it here was warming
 * each run's threads before timing them (work() below).
 * bf16 figures count flops as oneDNN and the GEMM benchmarks do, 2 m n k for
 * the product: one vdpbf16ps zmm is 16 lanes x 2 products = 64 flops, one
 * tdpbf16ps 16 x 16 x 32 products = 16384 flops. */
#define _GNU_SOURCE
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

#define CHAINS 12
#define ITERS (1L << 23) /* ~30 ms per run at this CPU's peak */
#define REPS 5

/* One FMA loop of an ISA family and precision, and why it cannot run here
 * (NULL: it can); each architecture's block lists its own. */
struct kernel {
  const char *isa, *precision;
  double flops; /* per run of loop() on one thread */
  double (*loop)(void);
  const char *(*unsupported)(void);
};

#if defined(__x86_64__)
/* acc = acc * x + y converges to 1 with x, y below: no overflow, no denormals. */
#define FMA_LOOP(name, isa, vec, set1, fmadd, add)                                            \
  __attribute__((target(isa))) static double name(void) {                                     \
    const vec x = set1(0.999999), y = set1(1e-6);                                             \
    vec acc[CHAINS];                                                                          \
    for (int i = 0; i < CHAINS; ++i) acc[i] = set1(0);                                        \
    for (long it = 0; it < ITERS; ++it) {                                                     \
      _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i) acc[i] = fmadd(acc[i], x, y); \
    }                                                                                         \
    for (int i = 1; i < CHAINS; ++i) acc[0] = add(acc[0], acc[i]);                            \
    return acc[0][0]; /* keeps the chains live */                                             \
  }

FMA_LOOP(avx512_f32, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
FMA_LOOP(avx512_f64, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd)
FMA_LOOP(avx2_f32, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
FMA_LOOP(avx2_f64, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd)

/* vdpbf16ps: acc += x0 y0 + x1 y1 per f32 lane; 2^-10 squared, 2 per lane and
 * ITERS times, ends near 16: no overflow, no denormals. */
__attribute__((target("avx512f,avx512bf16"))) static double avx512_bf16(void) {
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3a80); /* 2^-10 in bf16 */
  __m512 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_setzero_ps();
  for (long it = 0; it < ITERS; ++it) {
    _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
  }
  for (int i = 1; i < CHAINS; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return acc[0][0];
}

/* AMX: 6 accumulator tiles (16 x 16 f32) fed by the same A and B tiles (16 x 32
 * bf16), so that the loop is tdpbf16ps alone: 6 independent chains cover the
 * instruction's latency (~52 cycles at one issue per 16). */
#define AMX_ITERS (1L << 20) /* 6 M instructions: ~30 ms on Sapphire/Emerald Rapids */
#define AMX_CHAINS 6
struct tile_config { /* the 64-byte ldtilecfg operand, palette 1 */
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
__attribute__((target("amx-tile,amx-bf16"))) static double amx_bf16(void) {
  struct tile_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  uint16_t ab[16 * 32] __attribute__((aligned(64)));
  float out[16 * 16] __attribute__((aligned(64)));
  for (int i = 0; i < 16 * 32; ++i) ab[i] = 0x3a80; /* 2^-10: ends near 32 */
  _tile_loadconfig(&cfg);
  __asm__ volatile("" ::: "memory"); /* the tile loads read ab */
  _tile_loadd(6, ab, 64);
  _tile_loadd(7, ab, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (long it = 0; it < AMX_ITERS; ++it) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  _tile_stored(5, out, 64);
  _tile_release();
  __asm__ volatile("" ::: "memory"); /* out was written by the tile store */
  return out[0];
}

/* NULL when the kernel can run here, else why not. */
static const char *needs_avx512(void) { return __builtin_cpu_supports("avx512f") ? NULL : "no AVX-512F"; }
static const char *needs_avx2(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? NULL : "no AVX2/FMA";
}
static const char *needs_avx512_bf16(void) {
  unsigned a, b, c, d; /* CPUID.(7,1):EAX bit 5 */
  if (!__builtin_cpu_supports("avx512f") || !__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)))
    return "this CPU has no AVX512_BF16";
  return NULL;
}
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
/* CPUID.(7,0):EDX bits 22 (AMX-BF16) and 24 (AMX-TILE), the tile state enabled
 * by the OS (XCR0 bits 17-18), and Linux's permission, asked once per process
 * before the first tile instruction (else SIGILL). */
static const char *needs_amx(void) {
  static const char *why = "";
  if (why && !*why) {
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24))) {
      why = "this CPU has no AMX-BF16";
    } else if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) {
      why = "no XSAVE enabled by the OS";
    } else {
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      if ((lo & (3u << 17)) != (3u << 17)) why = "the OS does not enable the AMX tile state (XCR0)";
      else if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA))
        why = "Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
      else why = NULL;
    }
  }
  return why;
}

static const struct kernel kernels[] = {
    {"avx512", "f32", 2.0 * 16 * (CHAINS * ITERS), avx512_f32, needs_avx512},
    {"avx512", "f64", 2.0 * 8 * (CHAINS * ITERS), avx512_f64, needs_avx512},
    {"avx2", "f32", 2.0 * 8 * (CHAINS * ITERS), avx2_f32, needs_avx2},
    {"avx2", "f64", 2.0 * 4 * (CHAINS * ITERS), avx2_f64, needs_avx2},
    {"avx512_bf16", "bf16", 64.0 * (CHAINS * ITERS), avx512_bf16, needs_avx512_bf16},
    {"amx", "bf16", 16384.0 * (AMX_CHAINS * AMX_ITERS), amx_bf16, needs_amx},
};
#elif defined(__aarch64__)
/* NEON (Advanced SIMD), in every AArch64: 128-bit fmla, the same chains.
 * acc = y + acc * x converges to 1 as on x86. */
#define NEON_LOOP(name, vec, dup, fma, add, lane0)                                        \
  static double name(void) {                                                              \
    const vec x = dup(0.999999), y = dup(1e-6);                                           \
    vec acc[CHAINS];                                                                      \
    for (int i = 0; i < CHAINS; ++i) acc[i] = dup(0);                                     \
    for (long it = 0; it < ITERS; ++it) {                                                 \
      _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i) acc[i] = fma(y, acc[i], x); \
    }                                                                                     \
    for (int i = 1; i < CHAINS; ++i) acc[0] = add(acc[0], acc[i]);                        \
    return lane0(acc[0], 0);                                                              \
  }
NEON_LOOP(neon_f32, float32x4_t, vdupq_n_f32, vfmaq_f32, vaddq_f32, vgetq_lane_f32)
NEON_LOOP(neon_f64, float64x2_t, vdupq_n_f64, vfmaq_f64, vaddq_f64, vgetq_lane_f64)
static const char *needs_nothing(void) { return NULL; }

static const struct kernel kernels[] = {
    {"neon", "f32", 2.0 * 4 * (CHAINS * ITERS), neon_f32, needs_nothing},
    {"neon", "f64", 2.0 * 2 * (CHAINS * ITERS), neon_f64, needs_nothing},
};
#else
#error "hcops-peak: no FMA loop for this architecture"
#endif

struct worker {
  pthread_t thread;
  int cpu; /* -1: not pinned */
  int warm_up;
  const struct kernel *k;
  struct spin_barrier *start;
  double t0, t1;
};

/* The threads start together at a barrier that spins: a futex barrier lets
 * the first thread there halt its vCPU, which the host then wakes late,
 * the delay the warm-up is there to remove. */
struct spin_barrier {
  atomic_int arrived;
  int threads;
};

static void spin_barrier_wait(struct spin_barrier *b) {
  atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&b->arrived, memory_order_acquire) < b->threads) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
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
  /* Untimed first: a vCPU left idle while the previous loop ran on fewer
   * threads is woken by the host late and runs slow at first, and a 2-thread
   * run started on it measured one core's worth. 1-thread runs are not
   * warmed: their figure was steady without it (f32 113-116 GFLOPS in every
   * run on that guest), and they are half the runs. */
  if (w->warm_up) sink = w->k->loop();
  spin_barrier_wait(w->start);
  w->t0 = bench_now_s();
  sink = w->k->loop();
  w->t1 = bench_now_s();
  return NULL;
}

/* Wall time from the first start to the last end: all threads must overlap. */
static double run(const struct kernel *k, int threads, const int *cpus) {
  struct worker w[threads];
  struct spin_barrier start = {.threads = threads};
  atomic_init(&start.arrived, 0);
  for (int i = 0; i < threads; ++i) {
    w[i] = (struct worker){.cpu = cpus[i], .warm_up = threads > 1, .k = k, .start = &start};
    pthread_create(&w[i].thread, NULL, work, &w[i]);
  }
  double t0 = 1e30, t1 = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(w[i].thread, NULL);
    t0 = w[i].t0 < t0 ? w[i].t0 : t0;
    t1 = w[i].t1 > t1 ? w[i].t1 : t1;
  }
  return k->flops * threads / (t1 - t0) * 1e-9;
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
  else printf("%-11s %-9s %7s %9s\n", "isa", "precision", "threads", "GFLOPS");
  enum { NK = sizeof kernels / sizeof *kernels };
  const char *why[NK];
  static double best[NK][CPU_SETSIZE + 1]; /* [kernel][threads] */
  for (size_t i = 0; i < NK; ++i) why[i] = kernels[i].unsupported();
  for (int r = 0; r < REPS; ++r)
    for (size_t i = 0; i < NK; ++i) {
      for (int t = 1; t <= ncpu && !why[i]; ++t) {
        const double g = run(&kernels[i], t, cpus);
        best[i][t] = g > best[i][t] ? g : best[i][t];
      }
    }
  const char *isa = NULL; /* of the JSON object open */
  for (size_t i = 0; i < NK; ++i) {
    const struct kernel *k = &kernels[i];
    if (why[i]) { /* said plainly, in the table or (JSON) on stderr: the CSV and JSON hold only figures */
      if (json) fprintf(stderr, "hcops-peak: %s %s skipped: %s\n", k->isa, k->precision, why[i]);
      else printf("%-11s %-9s %7s %9s  (skipped: %s)\n", k->isa, k->precision, "-", "-", why[i]);
      continue;
    }
    if (json) {
      if (!isa || strcmp(isa, k->isa)) printf("%s\"%s\": {", isa ? "}, " : "", k->isa);
      else printf(", ");
      printf("\"%s\": {", k->precision);
      isa = k->isa;
    }
    for (int t = 1; t <= ncpu; ++t) {
      if (json) printf("%s\"%d\": %.1f", t > 1 ? ", " : "", t, best[i][t]);
      else printf("%-11s %-9s %7d %9.1f\n", k->isa, k->precision, t, best[i][t]);
      if (out) fprintf(out, "%s,%s,%d,%.1f\n", k->isa, k->precision, t, best[i][t]);
    }
    if (json) printf("}");
  }
  if (json) printf("%s}\n", isa ? "}" : "");
  if (out) fclose(out);
  return 0;
}
