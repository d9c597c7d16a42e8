/* hcops-replay [--precision s|d|b] LIB TRACE [REPEATS]: replays a recorded
 * sgemm_ trace (trace.h) through one BLAS and prints one JSON line with the
 * time of the attention products (m, n, k <= 256) and of the rest (Linear
 * layers). LIB is a shared library exporting sgemm_, or dnnl:PATH for oneDNN's
 * row-major dnnl_sgemm. --precision d replays the same calls through dgemm_
 * (oneDNN has no dnnl_dgemm, so not with dnnl:); --precision b with bf16 A and
 * B, f32 alpha, beta and C through sbgemm_ (OpenBLAS's ABI), or MKL's
 * cblas_gemm_bf16bf16f32 where the library has no sbgemm_, or with dnnl:
 * through dnnl_gemm_bf16bf16f32 (oneDNN 2.6's matmul primitive is
 * hcops-dnnl-bf16's). The first pass warms up; the
 * reported time is the fastest of REPEATS passes (default 3). One library per
 * process, so no two runtimes' threads share the cores. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *, const int *);
typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *, const double *,
                         const double *, const int *, const double *, const int *, const double *, double *,
                         const int *);
typedef void (*sbgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                          const uint16_t *, const int *, const uint16_t *, const int *, const float *, float *,
                          const int *);
/* MKL's: CBLAS layout and transposition constants as every CBLAS defines them. */
typedef void (*cblas_bf16_fn)(int, int, int, int, int, int, float, const uint16_t *, int, const uint16_t *, int,
                              float, float *, int);
enum { COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112 };
typedef int (*dnnl_bf16_fn)(char, char, int64_t, int64_t, int64_t, float, const uint16_t *, int64_t,
                            const uint16_t *, int64_t, float, float *, int64_t);
typedef int (*dnnl_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t,
                       float, float *, int64_t);

static sgemm_fn fortran;
static dgemm_fn fortran_d;
static sbgemm_fn fortran_b;
static cblas_bf16_fn cblas_b;
static dnnl_fn dnnl;
static dnnl_bf16_fn dnnl_b;

struct operands {
  void *a, *b, *c;
};

static void run(const struct call *c, void *ctx) {
  const struct operands *o = ctx;
  if (fortran_d) {
    const double alpha = c->alpha, beta = c->beta;
    fortran_d(&c->ta, &c->tb, &c->m, &c->n, &c->k, &alpha, o->a, &c->lda, o->b, &c->ldb, &beta, o->c, &c->ldc);
  } else if (fortran_b) {
    fortran_b(&c->ta, &c->tb, &c->m, &c->n, &c->k, &c->alpha, o->a, &c->lda, o->b, &c->ldb, &c->beta, o->c, &c->ldc);
  } else if (cblas_b) {
    cblas_b(COL_MAJOR, c->ta == 'N' ? NO_TRANS : TRANS, c->tb == 'N' ? NO_TRANS : TRANS, c->m, c->n, c->k, c->alpha,
            o->a, c->lda, o->b, c->ldb, c->beta, o->c, c->ldc);
  } else if (dnnl_b) { /* row-major, as dnnl below */
    dnnl_b(c->tb, c->ta, c->n, c->m, c->k, c->alpha, o->b, c->ldb, o->a, c->lda, c->beta, o->c, c->ldc);
  } else if (fortran) {
    fortran(&c->ta, &c->tb, &c->m, &c->n, &c->k, &c->alpha, o->a, &c->lda, o->b, &c->ldb, &c->beta, o->c, &c->ldc);
  } else { /* column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T */
    dnnl(c->tb, c->ta, c->n, c->m, c->k, c->alpha, o->b, c->ldb, o->a, c->lda, c->beta, o->c, c->ldc);
  }
}

int main(int argc, char **argv) {
  char precision = 's';
  if (argc > 2 && !strcmp(argv[1], "--precision")) {
    precision = argv[2][0];
    argc -= 2;
    argv += 2;
  }
  if (argc < 3 || !strchr("sdb", precision)) {
    fprintf(stderr, "usage: hcops-replay [--precision s|d|b] LIB|dnnl:LIB TRACE [REPEATS]\n");
    return 2;
  }
  const char *lib = argv[1];
  const int repeats = argc > 3 ? atoi(argv[3]) : 3;
  const int is_dnnl = !strncmp(lib, "dnnl:", 5);
  void *h = dlopen(is_dnnl ? lib + 5 : lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "hcops-replay: %s\n", dlerror());
    return 2;
  }
  if (is_dnnl) {
    if (precision == 's') dnnl = (dnnl_fn)dlsym(h, "dnnl_sgemm");
    if (precision == 'b') dnnl_b = (dnnl_bf16_fn)dlsym(h, "dnnl_gemm_bf16bf16f32");
  } else if (precision == 'd') {
    fortran_d = (dgemm_fn)dlsym(h, "dgemm_");
  } else if (precision == 'b') {
    fortran_b = (sbgemm_fn)dlsym(h, "sbgemm_");
    if (!fortran_b) cblas_b = (cblas_bf16_fn)dlsym(h, "cblas_gemm_bf16bf16f32");
  } else {
    fortran = (sgemm_fn)dlsym(h, "sgemm_");
  }
  if (!fortran && !fortran_d && !fortran_b && !cblas_b && !dnnl && !dnnl_b) {
    fprintf(stderr, "hcops-replay: %s has no %s\n", lib,
            precision == 'd'   ? "dgemm_"
            : precision == 'b' ? "sbgemm_, cblas_gemm_bf16bf16f32 or dnnl_gemm_bf16bf16f32"
                               : "sgemm_/dnnl_sgemm");
    return 2;
  }

  struct trace t;
  if (trace_read("hcops-replay", argv[2], &t)) return 2;
  const enum elem in = precision == 'd' ? ELEM_F64 : precision == 'b' ? ELEM_BF16 : ELEM_F32;
  const size_t in_size = in == ELEM_F64 ? 8 : in == ELEM_F32 ? 4 : 2, out_size = precision == 'd' ? 8 : 4;
  struct operands o = {malloc(t.max_a * in_size), malloc(t.max_b * in_size), calloc(t.max_c, out_size)};
  trace_fill(o.a, t.max_a, 7919, in);
  trace_fill(o.b, t.max_b, 104729, in);
  const struct timing r = trace_time(&t, repeats, run, &o);
  timing_print(&t, &r, NULL);
  return 0;
}
