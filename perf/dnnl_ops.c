/* hcops-dnnl-ops: oneDNN's primitive for one of the PyTorch operators HCOps
 * replaces, through oneDNN's C API, as the peer of perf/ops_bench.py.
 *
 *   hcops-dnnl-ops OP DIR DTYPE DIMS [--iters N] [--reps R] [--dump PREFIX]
 *   hcops-dnnl-ops --selftest [--quick]
 *
 * OP: gelu_tanh gelu_erf silu (eltwise gelu_tanh, gelu_erf, swish with
 * alpha 1), softmax log_softmax (softmax_v2, softmax_accurate and
 * softmax_log, over the last dimension), layer_norm (layer_normalization
 * over the last dimension, no scale or shift, as DiT's), layer_norm_affine
 * (with scale and shift, which oneDNN 2.6 keeps in f32). DIR: fwd | bwd.
 * DTYPE: f32 | bf16. DIMS: e.g. 8x256x1536, the last one the normalized axis.
 * Forward is training forward (LayerNorm saves mean and variance); backward
 * starts from the forward's results (softmax's dst, LayerNorm's statistics)
 * and computes every gradient PyTorch's backward does (LayerNorm with
 * affine: also diff_scale and diff_shift).
 *
 * Prints one JSON line: the implementation oneDNN chose (e.g.
 * "jit:avx512_core", what ONEDNN_VERBOSE=1 shows), the OpenMP threads it
 * runs on (OMP_NUM_THREADS), and the median over R batches of the time per
 * call of a batch of N calls, after one untimed call. Buffers are allocated
 * once: the time is the primitive's alone.
 *
 * --dump PREFIX writes each argument of the primitive under test after one
 * call, raw, to PREFIX.<arg> (src, dst, diff_dst, diff_src, mean, variance,
 * scale, shift, diff_scale, diff_shift; data arguments in DTYPE, the rest
 * f32) and lists them in the JSON line, so that ops_bench.py can check the
 * result against PyTorch's on the same inputs.
 *
 * --selftest runs every operator, direction and datatype on small shapes
 * (whose last dimension is no multiple of a vector) against a reference
 * computed here in double from the same inputs; exits 1 on a mismatch. */
#define _GNU_SOURCE
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "hcops-dnnl-ops"
#include "dnnl_check.h"
#include "bench_util.h"
#define MAX_ARGS 10
#define LN_EPS 1e-6f /* DiT's nn.LayerNorm(eps=1e-6) */

enum op { GELU_TANH, GELU_ERF, SILU, SOFTMAX, LOG_SOFTMAX, LAYER_NORM, LAYER_NORM_AFFINE, N_OPS };
static const char *const kOpNames[N_OPS] = {"gelu_tanh",  "gelu_erf",         "silu", "softmax", "log_softmax",
                                            "layer_norm", "layer_norm_affine"};

struct problem {
  enum op op;
  int bwd, bf16;
  int ndims;
  dnnl_dims_t dims;
  int64_t rows, cols; /* the last dimension, and the product of the others */
};

/* One argument of a primitive: its memory, in bf16 or f32 (data in the
 * problem's datatype; statistics, scale and shift always f32). */
struct arg {
  int id;
  const char *name;
  dnnl_memory_t mem;
  int bf16;
};

struct run {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  dnnl_primitive_t fwd, bwd;
  struct arg args[MAX_ARGS]; /* every memory, shared by fwd and bwd */
  int nargs;
  const char *impl; /* of the primitive under test */
};

/* ---- data ---------------------------------------------------------------- */

static uint16_t to_bf16(float f) { /* round to nearest even, NaN kept quiet */
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void *handle(dnnl_memory_t m) {
  void *p = NULL;
  CHECK(dnnl_memory_get_data_handle(m, &p));
  return p;
}

static size_t elements(dnnl_memory_t m) {
  const dnnl_memory_desc_t *md;
  CHECK(dnnl_memory_get_memory_desc(m, &md));
  size_t n = 1;
  for (int i = 0; i < md->ndims; ++i) n *= (size_t)md->dims[i];
  return n;
}

static float get(const struct arg *a, size_t i) {
  const void *p = handle(a->mem);
  return a->bf16 ? from_bf16(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void fill(const struct arg *a, double lo, double hi) {
  void *p = handle(a->mem);
  const size_t n = elements(a->mem);
  for (size_t i = 0; i < n; ++i) {
    const float v = (float)bench_uniform(lo, hi);
    if (a->bf16) ((uint16_t *)p)[i] = to_bf16(v);
    else ((float *)p)[i] = v;
  }
}

/* ---- primitives ---------------------------------------------------------- */

static int is_eltwise(enum op op) { return op <= SILU; }
static int is_softmax(enum op op) { return op == SOFTMAX || op == LOG_SOFTMAX; }
static int has_affine(enum op op) { return op == LAYER_NORM_AFFINE; }

static dnnl_alg_kind_t eltwise_alg(enum op op) {
  return op == GELU_TANH ? dnnl_eltwise_gelu_tanh : op == GELU_ERF ? dnnl_eltwise_gelu_erf : dnnl_eltwise_swish;
}

static dnnl_memory_desc_t data_md(const struct problem *pb) {
  static const dnnl_format_tag_t tags[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
  dnnl_memory_desc_t md;
  CHECK(dnnl_memory_desc_init_by_tag(&md, pb->ndims, pb->dims, pb->bf16 ? dnnl_bf16 : dnnl_f32, tags[pb->ndims]));
  return md;
}

static unsigned ln_flags(enum op op) { return has_affine(op) ? dnnl_use_scale | dnnl_use_shift : 0; }

/* Whether a primitive oneDNN does not implement on this CPU (dnnl_unimplemented:
 * the arm64 oneDNN 2.6 has no bf16 eltwise or layer norm) makes fwd_pd/bwd_pd
 * return NULL instead of stopping the program: the selftest's, which then
 * skips that problem, saying so. Any other failure still stops it. */
static int g_unimplemented_ok;

static dnnl_primitive_desc_t create_pd(const void *d, dnnl_engine_t engine, dnnl_primitive_desc_t hint) {
  dnnl_primitive_desc_t pd;
  const dnnl_status_t st = dnnl_primitive_desc_create(&pd, d, NULL, engine, hint);
  if (st == dnnl_unimplemented && g_unimplemented_ok) return NULL;
  CHECK(st);
  return pd;
}

static dnnl_primitive_desc_t fwd_pd(const struct problem *pb, dnnl_engine_t engine) {
  const dnnl_memory_desc_t md = data_md(pb);
  union {
    dnnl_eltwise_desc_t e;
    dnnl_softmax_v2_desc_t s;
    dnnl_layer_normalization_desc_t l;
  } d;
  if (is_eltwise(pb->op)) /* swish: x * sigmoid(alpha * x), alpha 1 is SiLU */
    CHECK(dnnl_eltwise_forward_desc_init(&d.e, dnnl_forward_training, eltwise_alg(pb->op), &md, 1.f, 0.f));
  else if (is_softmax(pb->op))
    CHECK(dnnl_softmax_v2_forward_desc_init(&d.s, dnnl_forward_training,
                                            pb->op == SOFTMAX ? dnnl_softmax_accurate : dnnl_softmax_log, &md, &md,
                                            pb->ndims - 1));
  else
    CHECK(dnnl_layer_normalization_forward_desc_init(&d.l, dnnl_forward_training, &md, NULL, LN_EPS, ln_flags(pb->op)));
  return create_pd(&d, engine, NULL);
}

static dnnl_primitive_desc_t bwd_pd(const struct problem *pb, dnnl_engine_t engine, dnnl_primitive_desc_t hint) {
  const dnnl_memory_desc_t md = data_md(pb);
  union {
    dnnl_eltwise_desc_t e;
    dnnl_softmax_v2_desc_t s;
    dnnl_layer_normalization_desc_t l;
  } d;
  if (is_eltwise(pb->op)) CHECK(dnnl_eltwise_backward_desc_init(&d.e, eltwise_alg(pb->op), &md, &md, 1.f, 0.f));
  else if (is_softmax(pb->op))
    CHECK(dnnl_softmax_v2_backward_desc_init(&d.s, pb->op == SOFTMAX ? dnnl_softmax_accurate : dnnl_softmax_log, &md,
                                             &md, &md, pb->ndims - 1));
  else /* without scale there is no parameter gradient: backward_data */
    CHECK(dnnl_layer_normalization_backward_desc_init(&d.l, has_affine(pb->op) ? dnnl_backward : dnnl_backward_data,
                                                      &md, &md, NULL, LN_EPS, ln_flags(pb->op)));
  return create_pd(&d, engine, hint);
}

/* The arguments of the forward and the backward primitive of each kind: its
 * inputs, OUTS, its outputs, 0. */
#define OUTS (-1)
static const int kEltFwd[] = {DNNL_ARG_SRC, OUTS, DNNL_ARG_DST, 0};
static const int kEltBwd[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, OUTS, DNNL_ARG_DIFF_SRC, 0};
static const int kSmFwd[] = {DNNL_ARG_SRC, OUTS, DNNL_ARG_DST, 0};
static const int kSmBwd[] = {DNNL_ARG_DST, DNNL_ARG_DIFF_DST, OUTS, DNNL_ARG_DIFF_SRC, 0};
static const int kLnFwd[] = {DNNL_ARG_SRC, OUTS, DNNL_ARG_DST, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, 0};
static const int kLnBwd[] = {
    DNNL_ARG_SRC, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_DIFF_DST, OUTS, DNNL_ARG_DIFF_SRC, 0};
static const int kLnFwdAffine[] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT,    OUTS,
                                   DNNL_ARG_DST, DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE, 0};
/* oneDNN 2.6's backward with dnnl_use_shift takes SHIFT too (it rejects the
 * call without), although diff_src does not depend on it. */
static const int kLnBwdAffine[] = {DNNL_ARG_SRC,
                                   DNNL_ARG_MEAN,
                                   DNNL_ARG_VARIANCE,
                                   DNNL_ARG_SCALE,
                                   DNNL_ARG_SHIFT,
                                   DNNL_ARG_DIFF_DST,
                                   OUTS,
                                   DNNL_ARG_DIFF_SRC,
                                   DNNL_ARG_DIFF_SCALE,
                                   DNNL_ARG_DIFF_SHIFT,
                                   0};

static const int *arg_ids(enum op op, int bwd) {
  if (is_eltwise(op)) return bwd ? kEltBwd : kEltFwd;
  if (is_softmax(op)) return bwd ? kSmBwd : kSmFwd;
  if (has_affine(op)) return bwd ? kLnBwdAffine : kLnFwdAffine;
  return bwd ? kLnBwd : kLnFwd;
}

static const char *arg_name(int id) {
  switch (id) {
    case DNNL_ARG_SRC: return "src";
    case DNNL_ARG_DST: return "dst";
    case DNNL_ARG_DIFF_DST: return "diff_dst";
    case DNNL_ARG_DIFF_SRC: return "diff_src";
    case DNNL_ARG_MEAN: return "mean";
    case DNNL_ARG_VARIANCE: return "variance";
    case DNNL_ARG_SCALE: return "scale";
    case DNNL_ARG_SHIFT: return "shift";
    case DNNL_ARG_DIFF_SCALE: return "diff_scale";
    case DNNL_ARG_DIFF_SHIFT: return "diff_shift";
  }
  return "?";
}

static struct arg *find_arg(struct run *r, int id) {
  for (int i = 0; i < r->nargs; ++i)
    if (r->args[i].id == id) return &r->args[i];
  return NULL;
}

/* The memories of pd's arguments that r does not have yet, allocated by oneDNN. */
static void add_args(struct run *r, dnnl_primitive_desc_t pd, const int *ids) {
  for (; *ids; ++ids) {
    if (*ids == OUTS || find_arg(r, *ids)) continue;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, *ids);
    struct arg *a = &r->args[r->nargs++];
    a->id = *ids;
    a->name = arg_name(*ids);
    a->bf16 = md->data_type == dnnl_bf16;
    CHECK(dnnl_memory_create(&a->mem, md, r->engine, DNNL_MEMORY_ALLOCATE));
  }
}

static void execute(struct run *r, dnnl_primitive_t p, const int *ids) {
  dnnl_exec_arg_t ea[MAX_ARGS];
  int n = 0;
  for (; *ids; ++ids)
    if (*ids != OUTS) ea[n++] = (dnnl_exec_arg_t){*ids, find_arg(r, *ids)->mem};
  CHECK(dnnl_primitive_execute(p, r->stream, n, ea));
}

static const char *impl_of(dnnl_primitive_desc_t pd) {
  const char *s = NULL;
  CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
  return strdup(s ? s : "?");
}

/* Creates the primitives and fills the inputs: src in [-4, 4] (GeLU's and
 * SiLU's curved part and their tails; softmax rows of attention-like
 * spread), diff_dst in [-1, 1], scale around 1, shift small. A backward run
 * gets its dst (softmax) or statistics (LayerNorm) from one forward call. */
static void teardown(struct run *r);

/* 0, or -1 where oneDNN has no implementation of it here (only when
 * g_unimplemented_ok; r is then torn down). */
static int setup(struct run *r, const struct problem *pb) {
  memset(r, 0, sizeof *r);
  CHECK(dnnl_engine_create(&r->engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&r->stream, r->engine, dnnl_stream_default_flags));
  dnnl_primitive_desc_t fpd = fwd_pd(pb, r->engine);
  dnnl_primitive_desc_t bpd = fpd && pb->bwd ? bwd_pd(pb, r->engine, fpd) : NULL;
  if (!fpd || (pb->bwd && !bpd)) {
    if (fpd) CHECK(dnnl_primitive_desc_destroy(fpd));
    teardown(r);
    return -1;
  }
  add_args(r, fpd, arg_ids(pb->op, 0));
  CHECK(dnnl_primitive_create(&r->fwd, fpd));
  fill(find_arg(r, DNNL_ARG_SRC), -4, 4);
  if (has_affine(pb->op)) {
    fill(find_arg(r, DNNL_ARG_SCALE), 0.5, 1.5);
    fill(find_arg(r, DNNL_ARG_SHIFT), -0.5, 0.5);
  }
  if (pb->bwd) {
    add_args(r, bpd, arg_ids(pb->op, 1));
    CHECK(dnnl_primitive_create(&r->bwd, bpd));
    fill(find_arg(r, DNNL_ARG_DIFF_DST), -1, 1);
    if (!is_eltwise(pb->op)) {
      execute(r, r->fwd, arg_ids(pb->op, 0));
      CHECK(dnnl_stream_wait(r->stream));
    }
    r->impl = impl_of(bpd);
    CHECK(dnnl_primitive_desc_destroy(bpd));
  } else {
    r->impl = impl_of(fpd);
  }
  CHECK(dnnl_primitive_desc_destroy(fpd));
  return 0;
}

static void call(struct run *r, const struct problem *pb) {
  execute(r, pb->bwd ? r->bwd : r->fwd, arg_ids(pb->op, pb->bwd));
}

static void teardown(struct run *r) {
  for (int i = 0; i < r->nargs; ++i) dnnl_memory_destroy(r->args[i].mem);
  if (r->fwd) dnnl_primitive_destroy(r->fwd);
  if (r->bwd) dnnl_primitive_destroy(r->bwd);
  dnnl_stream_destroy(r->stream);
  dnnl_engine_destroy(r->engine);
  free((void *)r->impl);
}

/* ---- parsing ------------------------------------------------------------- */

static int parse_problem(struct problem *pb, const char *op, const char *dir, const char *dtype, const char *dims) {
  memset(pb, 0, sizeof *pb);
  int found = 0;
  for (int i = 0; i < N_OPS; ++i)
    if (!strcmp(op, kOpNames[i])) pb->op = (enum op)i, found = 1;
  if (!found) return fprintf(stderr, PROG ": unknown operator '%s'\n", op), 0;
  if (strcmp(dir, "fwd") && strcmp(dir, "bwd")) return fprintf(stderr, PROG ": DIR is fwd or bwd\n"), 0;
  pb->bwd = !strcmp(dir, "bwd");
  if (strcmp(dtype, "f32") && strcmp(dtype, "bf16")) return fprintf(stderr, PROG ": DTYPE is f32 or bf16\n"), 0;
  pb->bf16 = !strcmp(dtype, "bf16");
  const char *p = dims;
  pb->rows = 1;
  while (*p) {
    char *end;
    const long long d = strtoll(p, &end, 10);
    if (end == p || d < 1 || pb->ndims == 5 || (*end && *end != 'x'))
      return fprintf(stderr, PROG ": bad DIMS '%s' (e.g. 8x256x1536, 1 to 5 positive sizes)\n", dims), 0;
    pb->dims[pb->ndims++] = d;
    p = *end ? end + 1 : end;
  }
  if (!pb->ndims) return fprintf(stderr, PROG ": empty DIMS\n"), 0;
  pb->cols = pb->dims[pb->ndims - 1];
  for (int i = 0; i < pb->ndims - 1; ++i) pb->rows *= pb->dims[i];
  return 1;
}

/* ---- timing -------------------------------------------------------------- */

static int dump(struct run *r, const struct problem *pb, const char *prefix) {
  const int *ids = arg_ids(pb->op, pb->bwd);
  printf("\"files\": {");
  for (int k = 0, n = 0; ids[k]; ++k) {
    if (ids[k] == OUTS) continue;
    const struct arg *a = find_arg(r, ids[k]);
    char path[4096];
    snprintf(path, sizeof path, "%s.%s", prefix, a->name);
    FILE *f = fopen(path, "wb");
    const size_t bytes = elements(a->mem) * (a->bf16 ? 2 : 4);
    if (!f || fwrite(handle(a->mem), 1, bytes, f) != bytes || fclose(f)) {
      fprintf(stderr, PROG ": cannot write %s\n", path);
      return 0;
    }
    printf("%s\"%s\": [\"%s\", \"%s\"]", n++ ? ", " : "", a->name, path, a->bf16 ? "bf16" : "f32");
  }
  printf("}, ");
  return 1;
}

static int bench(const struct problem *pb, const char *dims, long iters, int reps, const char *prefix) {
  struct run r;
  setup(&r, pb);
  call(&r, pb); /* untimed: first-touch of the outputs, oneDNN's lazy set-up */
  CHECK(dnnl_stream_wait(r.stream));
  printf("{\"op\": \"%s\", \"dir\": \"%s\", \"dtype\": \"%s\", \"dims\": \"%s\", \"impl\": \"%s\", ", kOpNames[pb->op],
         pb->bwd ? "bwd" : "fwd", pb->bf16 ? "bf16" : "f32", dims, r.impl);
  if (prefix && !dump(&r, pb, prefix)) return 2;
  double *t = malloc(sizeof *t * reps);
  for (int i = 0; i < reps; ++i) {
    const double t0 = 1e9 * bench_now_s();
    for (long k = 0; k < iters; ++k) call(&r, pb);
    CHECK(dnnl_stream_wait(r.stream));
    t[i] = (1e9 * bench_now_s() - t0) / iters;
  }
  printf("\"threads\": %d, \"iters\": %ld, \"reps\": %d, \"ns\": %.1f}\n", omp_get_max_threads(), iters, reps,
         bench_median(t, reps));
  free(t);
  teardown(&r);
  return 0;
}

/* ---- selftest: the primitives against double references ------------------ */

static double gelu_tanh_ref(double x, int d) {
  const double k = sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = tanh(u);
  return d ? 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x) : 0.5 * x * (1 + t);
}
static double gelu_erf_ref(double x, int d) {
  const double cdf = 0.5 * (1 + erf(x / sqrt(2)));
  return d ? cdf + x * exp(-0.5 * x * x) / sqrt(2 * M_PI) : x * cdf;
}
static double silu_ref(double x, int d) {
  const double s = 1 / (1 + exp(-x));
  return d ? s * (1 + x * (1 - s)) : x * s;
}

/* The expected output of r's primitive under test in out[arg][i], computed
 * from the inputs r holds. */
static void reference(struct run *r, const struct problem *pb, double *out[MAX_ARGS]) {
  const int64_t R = pb->rows, C = pb->cols;
  const struct arg *src = find_arg(r, DNNL_ARG_SRC), *dst = find_arg(r, DNNL_ARG_DST),
                   *dd = find_arg(r, DNNL_ARG_DIFF_DST);
#define OUT(id) out[find_arg(r, id) - r->args]
  if (is_eltwise(pb->op)) {
    double (*f)(double, int) = pb->op == GELU_TANH ? gelu_tanh_ref : pb->op == GELU_ERF ? gelu_erf_ref : silu_ref;
    double *y = pb->bwd ? OUT(DNNL_ARG_DIFF_SRC) : OUT(DNNL_ARG_DST);
    for (int64_t i = 0; i < R * C; ++i) y[i] = pb->bwd ? get(dd, i) * f(get(src, i), 1) : f(get(src, i), 0);
    return;
  }
  for (int64_t i = 0; i < R; ++i) {
    const size_t o = (size_t)(i * C);
    if (is_softmax(pb->op) && !pb->bwd) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < C; ++j) m = fmax(m, get(src, o + j));
      for (int64_t j = 0; j < C; ++j) s += exp(get(src, o + j) - m);
      for (int64_t j = 0; j < C; ++j) {
        const double x = get(src, o + j) - m;
        OUT(DNNL_ARG_DST)[o + j] = pb->op == LOG_SOFTMAX ? x - log(s) : exp(x) / s;
      }
    } else if (is_softmax(pb->op)) { /* from the forward's dst, as PyTorch's backward */
      double s = 0;
      for (int64_t j = 0; j < C; ++j) s += pb->op == LOG_SOFTMAX ? get(dd, o + j) : get(dd, o + j) * get(dst, o + j);
      for (int64_t j = 0; j < C; ++j) {
        const double y = get(dst, o + j), g = get(dd, o + j);
        OUT(DNNL_ARG_DIFF_SRC)[o + j] = pb->op == LOG_SOFTMAX ? g - exp(y) * s : y * (g - s);
      }
    } else { /* LayerNorm: statistics recomputed here in double */
      double m = 0, v = 0;
      for (int64_t j = 0; j < C; ++j) m += get(src, o + j);
      m /= C;
      for (int64_t j = 0; j < C; ++j) v += (get(src, o + j) - m) * (get(src, o + j) - m);
      v /= C;
      const double rstd = 1 / sqrt(v + LN_EPS);
      const struct arg *sc = find_arg(r, DNNL_ARG_SCALE), *sh = find_arg(r, DNNL_ARG_SHIFT);
      if (!pb->bwd) {
        OUT(DNNL_ARG_MEAN)[i] = m;
        OUT(DNNL_ARG_VARIANCE)[i] = v;
        for (int64_t j = 0; j < C; ++j)
          OUT(DNNL_ARG_DST)[o + j] = (get(src, o + j) - m) * rstd * (sc ? get(sc, j) : 1) + (sh ? get(sh, j) : 0);
        continue;
      }
      /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale */
      double mg = 0, mgx = 0;
      for (int64_t j = 0; j < C; ++j) {
        const double g = get(dd, o + j) * (sc ? get(sc, j) : 1), xh = (get(src, o + j) - m) * rstd;
        mg += g, mgx += g * xh;
      }
      mg /= C, mgx /= C;
      for (int64_t j = 0; j < C; ++j) {
        const double g = get(dd, o + j) * (sc ? get(sc, j) : 1), xh = (get(src, o + j) - m) * rstd;
        OUT(DNNL_ARG_DIFF_SRC)[o + j] = rstd * (g - mg - xh * mgx);
        if (sc) {
          OUT(DNNL_ARG_DIFF_SCALE)[j] += get(dd, o + j) * xh;
          OUT(DNNL_ARG_DIFF_SHIFT)[j] += get(dd, o + j);
        }
      }
    }
  }
#undef OUT
}

/* Compares the outputs of one call against the reference: each element
 * within rtol * |ref| + atol * max(1, max|ref|): the absolute term covers
 * values that cancel in a sum and outputs near 0 (log_softmax of a single
 * element is 0; oneDNN's polynomial log gives 1.4e-6). f32: 1e-5 and 1e-5
 * (oneDNN approximates exp, log, tanh and erf by polynomials); bf16: 2^-7 (a
 * rounding of the result plus a unit in the last place) and 2^-8. Returns
 * the number of failing outputs. */
static int selftest_one(const struct problem *pb, const char *dims) {
  struct run r;
  if (setup(&r, pb) != 0) {
    printf("skip %s %s %s %s: oneDNN has no implementation of it on this CPU (dnnl_unimplemented)\n",
           kOpNames[pb->op], pb->bwd ? "bwd" : "fwd", pb->bf16 ? "bf16" : "f32", dims);
    return 0;
  }
  call(&r, pb);
  CHECK(dnnl_stream_wait(r.stream));
  double *ref[MAX_ARGS] = {0};
  const int *outs = arg_ids(pb->op, pb->bwd);
  while (*outs++ != OUTS) {
  }
  for (const int *id = outs; *id; ++id) {
    struct arg *a = find_arg(&r, *id);
    ref[a - r.args] = calloc(elements(a->mem), sizeof(double));
  }
  reference(&r, pb, ref);
  const double rtol = pb->bf16 ? 0x1p-7 : 1e-5, atol = pb->bf16 ? 0x1p-8 : 1e-5;
  int failed = 0;
  for (const int *id = outs; *id; ++id) {
    struct arg *a = find_arg(&r, *id);
    const double *want = ref[a - r.args];
    const size_t n = elements(a->mem);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; ++i) scale = fmax(scale, fabs(want[i]));
    size_t bad = n;
    for (size_t i = 0; i < n; ++i) {
      const double err = fabs(get(a, i) - want[i]) / (rtol * fabs(want[i]) + atol * fmax(scale, 1));
      if (!(err <= 1) && bad == n) bad = i; /* NaN fails too */
      if (!(err <= worst)) worst = err;
    }
    printf("%-4s %s %s %s %s %s: %s, worst error %.3g of the tolerance\n", bad == n ? "ok" : "FAIL", kOpNames[pb->op],
           pb->bwd ? "bwd" : "fwd", pb->bf16 ? "bf16" : "f32", dims, a->name, r.impl, worst);
    if (bad != n) {
      fprintf(stderr, PROG ": %s %s %s %s: %s[%zu] = %.9g, expected %.9g\n", kOpNames[pb->op], pb->bwd ? "bwd" : "fwd",
              pb->bf16 ? "bf16" : "f32", dims, a->name, bad, get(a, bad), want[bad]);
      ++failed;
    }
    free(ref[a - r.args]);
  }
  teardown(&r);
  return failed;
}

static int selftest(int quick) {
  /* last dimensions off the vector widths (16 f32, 32 bf16 lanes), and one row */
  static const char *const kQuick[] = {"3x5x37"};
  static const char *const kFull[] = {"3x5x37", "1x1", "7x100", "2x3x4x129"};
  const char *const *shapes = quick ? kQuick : kFull;
  g_unimplemented_ok = 1;
  const int nshapes = quick ? 1 : 4;
  int failed = 0;
  for (int s = 0; s < nshapes; ++s)
    for (int op = 0; op < N_OPS; ++op)
      for (int bwd = 0; bwd < 2; ++bwd)
        for (int bf16 = 0; bf16 < 2; ++bf16) {
          struct problem pb;
          if (!parse_problem(&pb, kOpNames[op], bwd ? "bwd" : "fwd", bf16 ? "bf16" : "f32", shapes[s])) return 2;
          failed += selftest_one(&pb, shapes[s]);
        }
  if (failed) fprintf(stderr, PROG ": selftest: %d output(s) off the reference\n", failed);
  return failed ? 1 : 0;
}

static int usage(void) {
  fprintf(stderr, "usage: " PROG
                  " OP DIR DTYPE DIMS [--iters N] [--reps R] [--dump PREFIX]\n"
                  "       " PROG
                  " --selftest [--quick]\n"
                  "OP: gelu_tanh gelu_erf silu softmax log_softmax layer_norm layer_norm_affine; DIR: fwd bwd; "
                  "DTYPE: f32 bf16; DIMS: e.g. 8x256x1536\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *pos[4], *prefix = NULL;
  int npos = 0, self = 0, quick = 0, reps = 5;
  long iters = 10;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--selftest")) self = 1;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) prefix = argv[++i];
    else if (argv[i][0] == '-' || npos == 4) return usage();
    else pos[npos++] = argv[i];
  }
  if (self) return npos ? usage() : selftest(quick);
  if (npos != 4 || iters < 1 || reps < 1) return usage();
  struct problem pb;
  if (!parse_problem(&pb, pos[0], pos[1], pos[2], pos[3])) return 2;
  return bench(&pb, pos[3], iters, reps, prefix);
}
