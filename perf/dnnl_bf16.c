/* hcops-dnnl-bf16: oneDNN's bf16 GEMM, as the peer of HCOps' sbgemm_ in
 * perf/gemm_replay.py and perf/gemm_sweep.py --precisions bf16.
 *
 *   hcops-dnnl-bf16 gemm|matmul TRACE [REPEATS]
 *   hcops-dnnl-bf16 --selftest
 *
 * Replays a recorded sgemm_ trace (trace.h) with bf16 A and B and f32 C,
 * timed as hcops-replay does, through
 *   gemm:   dnnl_gemm_bf16bf16f32 (row-major: column-major C = op(A) op(B) is
 *           row-major C^T = op(B)^T op(A)^T);
 *   matmul: the matmul primitive with bf16 src and weights and f32 dst, as
 *           PyTorch's ideep layer drives it: the primitive created once per
 *           distinct call and cached (ideep's primitive cache), memory objects
 *           wrapping the caller's buffers created for every call; the same
 *           transposition, src = op(B)^T (n x k), weights = op(A)^T (k x m),
 *           dst = C^T (n x m), each with the strides the BLAS call gives it;
 *           alpha as output scale, beta as a sum post-op.
 * Prints hcops-replay's JSON line plus "impl": the implementations oneDNN chose
 * (e.g. "brg:avx512_core_bf16", what ONEDNN_VERBOSE=1 shows; gemm: "gemm").
 *
 * --selftest runs both paths on small calls (every transposition, ld larger
 * than the minimum, alpha 1 and 0.5, beta 0, 1 and -2, odd k) against a
 * reference computed here in double from the same bf16 inputs, on
 * oneDNN's OpenMP threads (OMP_NUM_THREADS); exits 1 on a mismatch. */
#define _GNU_SOURCE
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define PROG "hcops-dnnl-bf16"
#include "dnnl_check.h"
#include "bench_util.h"

/* Exported by libdnnl.so.2 (2.6) but declared in no installed header: oneDNN's
 * own declaration (src/common/gemm.cpp, bfloat16_t being a uint16_t). */
dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K, float alpha,
                                    const uint16_t *A, dnnl_dim_t lda, const uint16_t *B, dnnl_dim_t ldb, float beta,
                                    float *C, dnnl_dim_t ldc);

/* ---- the matmul primitive, cached per distinct call ----------------------- */

struct cached {
  struct call key;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t src, wei, dst;
};

struct matmul {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  struct cached *cache;
  size_t n, cap;
  char impl[256]; /* the distinct implementations, comma-separated */
};

static dnnl_memory_desc_t strided(dnnl_dim_t rows, dnnl_dim_t cols, dnnl_dim_t row_stride, dnnl_dim_t col_stride,
                                  dnnl_data_type_t type) {
  dnnl_memory_desc_t md;
  const dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
  CHECK(dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides));
  return md;
}

static void note_impl(struct matmul *mm, dnnl_primitive_desc_t pd) {
  const char *s = NULL;
  CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
  if (!s || strstr(mm->impl, s)) return;
  const size_t used = strlen(mm->impl);
  snprintf(mm->impl + used, sizeof mm->impl - used, "%s%s", used ? "," : "", s);
}

static struct cached *primitive(struct matmul *mm, const struct call *c) {
  for (size_t i = 0; i < mm->n; ++i)
    if (call_same(&mm->cache[i].key, c)) return &mm->cache[i];
  if (mm->n == mm->cap) mm->cache = realloc(mm->cache, (mm->cap = mm->cap ? 2 * mm->cap : 64) * sizeof *mm->cache);
  struct cached *e = &mm->cache[mm->n++];
  e->key = *c;
  /* op(B)^T: B is k x n (N) or n x k (T), column-major with ldb */
  e->src = c->tb == 'N' ? strided(c->n, c->k, c->ldb, 1, dnnl_bf16) : strided(c->n, c->k, 1, c->ldb, dnnl_bf16);
  e->wei = c->ta == 'N' ? strided(c->k, c->m, c->lda, 1, dnnl_bf16) : strided(c->k, c->m, 1, c->lda, dnnl_bf16);
  e->dst = strided(c->n, c->m, c->ldc, 1, dnnl_f32);
  dnnl_matmul_desc_t d;
  CHECK(dnnl_matmul_desc_init(&d, &e->src, &e->wei, NULL, &e->dst));
  dnnl_primitive_attr_t attr;
  CHECK(dnnl_primitive_attr_create(&attr));
  if (c->alpha != 1) CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &c->alpha));
  if (c->beta != 0) {
    dnnl_post_ops_t po;
    CHECK(dnnl_post_ops_create(&po));
    CHECK(dnnl_post_ops_append_sum(po, c->beta));
    CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    CHECK(dnnl_post_ops_destroy(po));
  }
  dnnl_primitive_desc_t pd;
  CHECK(dnnl_primitive_desc_create(&pd, &d, attr, mm->engine, NULL));
  note_impl(mm, pd);
  CHECK(dnnl_primitive_create(&e->prim, pd));
  CHECK(dnnl_primitive_desc_destroy(pd));
  CHECK(dnnl_primitive_attr_destroy(attr));
  return e;
}

struct operands {
  uint16_t *a, *b;
  float *c;
  struct matmul *mm; /* NULL: dnnl_gemm_bf16bf16f32 */
};

static void run(const struct call *c, void *ctx) {
  const struct operands *o = ctx;
  if (!o->mm) {
    CHECK(dnnl_gemm_bf16bf16f32(c->tb, c->ta, c->n, c->m, c->k, c->alpha, o->b, c->ldb, o->a, c->lda, c->beta, o->c,
                                c->ldc));
    return;
  }
  struct matmul *mm = o->mm;
  const struct cached *e = primitive(mm, c);
  dnnl_memory_t src, wei, dst;
  CHECK(dnnl_memory_create(&src, &e->src, mm->engine, o->b));
  CHECK(dnnl_memory_create(&wei, &e->wei, mm->engine, o->a));
  CHECK(dnnl_memory_create(&dst, &e->dst, mm->engine, o->c));
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  CHECK(dnnl_primitive_execute(e->prim, mm->stream, 3, args));
  CHECK(dnnl_stream_wait(mm->stream));
  dnnl_memory_destroy(src);
  dnnl_memory_destroy(wei);
  dnnl_memory_destroy(dst);
}

static void matmul_init(struct matmul *mm) {
  memset(mm, 0, sizeof *mm);
  CHECK(dnnl_engine_create(&mm->engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&mm->stream, mm->engine, dnnl_stream_default_flags));
}

static void matmul_fini(struct matmul *mm) {
  for (size_t i = 0; i < mm->n; ++i) dnnl_primitive_destroy(mm->cache[i].prim);
  free(mm->cache);
  dnnl_stream_destroy(mm->stream);
  dnnl_engine_destroy(mm->engine);
}

/* ---- selftest ------------------------------------------------------------- */

/* A column-major element of op(X), X with leading dimension ld. */
static float op_elem(const uint16_t *x, char t, int ld, int row, int col) {
  return from_bf16(t == 'N' ? x[row + (size_t)col * ld] : x[col + (size_t)row * ld]);
}

/* One call through one path: every element of C within (k + 2) 2^-24 of
 * |alpha| sum |a||b| + |beta c| (f32 accumulation of bf16 products, which are
 * exact in f32) of the double reference; elements of C outside m x n
 * (ld > m) unchanged. Returns 1 on a mismatch. */
static int check_one(const struct call *c, struct matmul *mm) {
  const size_t na = call_a_elems(c), nb = call_b_elems(c), nc = call_c_elems(c);
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *out = malloc(nc * 4), *c0 = malloc(nc * 4);
  for (size_t i = 0; i < na; ++i) a[i] = to_bf16((float)bench_uniform(-1, 1));
  for (size_t i = 0; i < nb; ++i) b[i] = to_bf16((float)bench_uniform(-1, 1));
  for (size_t i = 0; i < nc; ++i) out[i] = c0[i] = (float)bench_uniform(-1, 1);
  struct operands o = {a, b, out, mm};
  run(c, &o);
  int bad = 0;
  double worst = 0;
  for (int j = 0; j < c->n; ++j)
    for (int i = 0; i < c->ldc; ++i) {
      const size_t at = i + (size_t)j * c->ldc;
      if (i >= c->m) {
        bad |= out[at] != c0[at];
        continue;
      }
      double sum = 0, mag = 0;
      for (int p = 0; p < c->k; ++p) {
        const double x = op_elem(a, c->ta, c->lda, i, p), y = op_elem(b, c->tb, c->ldb, p, j);
        sum += x * y;
        mag += fabs(x * y);
      }
      const double want = c->alpha * sum + (c->beta != 0 ? c->beta * c0[at] : 0);
      const double tol = (c->k + 2) * 0x1p-24 * (fabs(c->alpha) * mag + fabs(c->beta * c0[at]));
      const double err = fabs(out[at] - want) / tol;
      if (!(err <= 1)) bad = 1; /* NaN fails too */
      if (err > worst) worst = err;
    }
  printf("%-4s %-6s %c%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g: worst error %.3g of the bound\n",
         bad ? "FAIL" : "ok", mm ? "matmul" : "gemm", c->ta, c->tb, c->m, c->n, c->k, c->lda, c->ldb, c->ldc, c->alpha,
         c->beta, worst);
  free(a), free(b), free(out), free(c0);
  return bad;
}

/* Whether oneDNN implements the path on this CPU at all (the arm64 oneDNN
 * 2.6 has neither dnnl_gemm_bf16bf16f32 nor a bf16 matmul): a 2x2x2 call
 * or primitive descriptor; dnnl_unimplemented is the only answer taken as
 * "no", anything else but success stops the program. */
static int path_implemented(struct matmul *mm) {
  const uint16_t one[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
  float c[4] = {0};
  if (!mm) {
    const dnnl_status_t st = dnnl_gemm_bf16bf16f32('N', 'N', 2, 2, 2, 1.f, one, 2, one, 2, 0.f, c, 2);
    if (st == dnnl_unimplemented) return 0;
    CHECK(st);
    return 1;
  }
  const dnnl_memory_desc_t src = strided(2, 2, 2, 1, dnnl_bf16), dst = strided(2, 2, 2, 1, dnnl_f32);
  dnnl_matmul_desc_t d;
  CHECK(dnnl_matmul_desc_init(&d, &src, &src, NULL, &dst));
  dnnl_primitive_desc_t pd;
  const dnnl_status_t st = dnnl_primitive_desc_create(&pd, &d, NULL, mm->engine, NULL);
  if (st == dnnl_unimplemented) return 0;
  CHECK(st);
  CHECK(dnnl_primitive_desc_destroy(pd));
  return 1;
}

static int selftest(void) {
  static const int shapes[][3] = {{5, 7, 9}, {33, 17, 64}, {70, 40, 31}};
  static const float alphas[] = {1, 0.5f}, betas[] = {0, 1, -2};
  struct matmul mm;
  matmul_init(&mm);
  int failed = 0;
  for (int path = 0; path < 2; ++path) {
    if (!path_implemented(path ? &mm : NULL)) {
      printf("skip %s: oneDNN has no bf16 implementation of it on this CPU (dnnl_unimplemented)\n",
             path ? "matmul" : "gemm");
      continue;
    }
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s)
      for (int t = 0; t < 4; ++t)
        for (int ab = 0; ab < 6; ++ab) {
          struct call c = {.ta = t & 1 ? 'T' : 'N', .tb = t & 2 ? 'T' : 'N'};
          c.m = shapes[s][0], c.n = shapes[s][1], c.k = shapes[s][2];
          c.lda = (c.ta == 'N' ? c.m : c.k) + 3;
          c.ldb = (c.tb == 'N' ? c.k : c.n) + 2;
          c.ldc = c.m + 1;
          c.alpha = alphas[ab % 2];
          c.beta = betas[ab / 2];
          failed += check_one(&c, path ? &mm : NULL);
        }
  }
  matmul_fini(&mm);
  if (failed) fprintf(stderr, PROG ": selftest: %d call(s) off the reference\n", failed);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--selftest")) return selftest();
  if (argc < 3 || argc > 4 || (strcmp(argv[1], "gemm") && strcmp(argv[1], "matmul"))) {
    fprintf(stderr, "usage: " PROG " gemm|matmul TRACE [REPEATS]\n       " PROG " --selftest\n");
    return 2;
  }
  const int repeats = argc > 3 ? atoi(argv[3]) : 3;
  struct trace t;
  if (trace_read(PROG, argv[2], &t)) return 2;
  struct matmul mm;
  const int use_matmul = !strcmp(argv[1], "matmul");
  if (use_matmul) matmul_init(&mm);
  struct operands o = {malloc(t.max_a * 2), malloc(t.max_b * 2), calloc(t.max_c, 4), use_matmul ? &mm : NULL};
  trace_fill(o.a, t.max_a, 7919, ELEM_BF16);
  trace_fill(o.b, t.max_b, 104729, ELEM_BF16);
  const struct timing r = trace_time(&t, repeats, run, &o);
  char extra[320]; /* the primitives were created in the warm-up pass: the list is complete */
  snprintf(extra, sizeof extra, ", \"impl\": \"%s\"", use_matmul ? mm.impl : "gemm");
  timing_print(&t, &r, extra);
  if (use_matmul) matmul_fini(&mm);
  return 0;
}
