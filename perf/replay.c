/* hcops-replay [--precision s|d] LIB TRACE [REPEATS]: replays a recorded sgemm_
 * trace (the CSV of shared/workloads, or HCOPS_VERBOSE exec lines' fields 4-13)
 * through one BLAS and prints one JSON line with the time of the attention
 * products (m, n, k <= 256) and of the rest (Linear layers). LIB is a shared
 * library exporting sgemm_, or dnnl:PATH for oneDNN's row-major dnnl_sgemm.
 * --precision d replays the same calls through dgemm_ (oneDNN 2.6 has no
 * dnnl_dgemm, so not with dnnl:). The first pass warms up; the reported time is
 * the fastest of REPEATS passes (default 3). One library per process, so no two
 * runtimes' threads share the cores. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *, const int *);
typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *, const double *,
                         const double *, const int *, const double *, const int *, const double *, double *,
                         const int *);
typedef int (*dnnl_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t,
                       float, float *, int64_t);

struct call {
  char ta, tb;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
};

static sgemm_fn fortran;
static dgemm_fn fortran_d;
static dnnl_fn dnnl;

static void run(const struct call *c, const void *a, const void *b, void *out) {
  if (fortran_d) {
    const double alpha = c->alpha, beta = c->beta;
    fortran_d(&c->ta, &c->tb, &c->m, &c->n, &c->k, &alpha, a, &c->lda, b, &c->ldb, &beta, out, &c->ldc);
  } else if (fortran) {
    fortran(&c->ta, &c->tb, &c->m, &c->n, &c->k, &c->alpha, a, &c->lda, b, &c->ldb, &c->beta, out, &c->ldc);
  } else { /* column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T */
    dnnl(c->tb, c->ta, c->n, c->m, c->k, c->alpha, b, c->ldb, a, c->lda, c->beta, out, c->ldc);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Values in [-0.5, 0.5): no overflow, no denormals, whatever the shape. */
static void fill(void *x, size_t n, size_t stride, int dbl) {
  for (size_t i = 0; i < n; ++i) {
    const double v = (double)((i * stride) % 1000) / 1000.0 - 0.5;
    if (dbl) ((double *)x)[i] = v;
    else ((float *)x)[i] = (float)v;
  }
}

static int is_attention(const struct call *c) { return c->m <= 256 && c->n <= 256 && c->k <= 256; }

int main(int argc, char **argv) {
  int dbl = 0;
  if (argc > 2 && !strcmp(argv[1], "--precision")) {
    dbl = argv[2][0] == 'd';
    argc -= 2;
    argv += 2;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: hcops-replay [--precision s|d] LIB|dnnl:LIB TRACE [REPEATS]\n");
    return 2;
  }
  const char *lib = argv[1];
  const int repeats = argc > 3 ? atoi(argv[3]) : 3;
  void *h = dlopen(strncmp(lib, "dnnl:", 5) ? lib : lib + 5, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "hcops-replay: %s\n", dlerror());
    return 2;
  }
  if (!strncmp(lib, "dnnl:", 5)) {
    if (!dbl) dnnl = (dnnl_fn)dlsym(h, "dnnl_sgemm");
  } else if (dbl) {
    fortran_d = (dgemm_fn)dlsym(h, "dgemm_");
  } else {
    fortran = (sgemm_fn)dlsym(h, "sgemm_");
  }
  if (!fortran && !fortran_d && !dnnl) {
    fprintf(stderr, "hcops-replay: %s has no %s\n", lib, dbl ? "dgemm_" : "sgemm_/dnnl_sgemm");
    return 2;
  }

  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  size_t n = 0, cap = 1024;
  struct call *calls = malloc(cap * sizeof *calls);
  size_t max_a = 1, max_b = 1, max_c = 1;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    struct call c;
    if (sscanf(line, " %c,%c,%d,%d,%d,%f,%d,%d,%f,%d", &c.ta, &c.tb, &c.m, &c.n, &c.k, &c.alpha, &c.lda, &c.ldb,
               &c.beta, &c.ldc) != 10)
      continue; /* header */
    if (n == cap) calls = realloc(calls, (cap *= 2) * sizeof *calls);
    calls[n++] = c;
    const size_t sa = (size_t)c.lda * (c.ta == 'N' ? c.k : c.m), sb = (size_t)c.ldb * (c.tb == 'N' ? c.n : c.k);
    const size_t sc = (size_t)c.ldc * c.n;
    max_a = sa > max_a ? sa : max_a;
    max_b = sb > max_b ? sb : max_b;
    max_c = sc > max_c ? sc : max_c;
  }
  fclose(f);
  const size_t es = dbl ? sizeof(double) : sizeof(float);
  void *a = malloc(max_a * es), *b = malloc(max_b * es), *c = calloc(max_c, es);
  fill(a, max_a, 7919, dbl);
  fill(b, max_b, 104729, dbl);

  double flops[2] = {0, 0}, best[2] = {1e30, 1e30};
  for (size_t i = 0; i < n; ++i) flops[is_attention(&calls[i])] += 2.0 * calls[i].m * calls[i].n * calls[i].k;
  for (int r = 0; r <= repeats; ++r) {
    double part[2] = {0, 0};
    for (size_t i = 0; i < n; ++i) {
      const double t0 = now();
      run(&calls[i], a, b, c);
      part[is_attention(&calls[i])] += now() - t0;
    }
    if (r == 0) continue; /* warm-up: page faults, thread pools, packing buffers */
    if (part[0] + part[1] < best[0] + best[1]) {
      best[0] = part[0];
      best[1] = part[1];
    }
  }
  printf(
      "{\"calls\": %zu, \"linear_s\": %.6f, \"attention_s\": %.6f, \"linear_gflop\": %.3f, "
      "\"attention_gflop\": %.3f}\n",
      n, best[0], best[1], flops[0] * 1e-9, flops[1] * 1e-9);
  return 0;
}
