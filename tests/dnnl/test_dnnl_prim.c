/* The matmul and inner-product primitives HCOps takes over, through the
 * oneDNN C API (a plain program linked against libdnnl).
 *
 *   test_dnnl_prim run OUT   runs every case, writes each result to OUT and
 *                            "hcops_test,case,<name>" on stdout before it, so
 *                            that the verbose lines that follow are its own;
 *   test_dnnl_prim compare REF OUT
 *                            compares two runs within each case's tolerance.
 *
 * test_dnnl_prim.sh runs it with HCOPS_DNNL=0 (everything forwarded: the
 * real library's results, and ONEDNN_VERBOSE's lines) and with the takeover
 * (HCOPS_VERBOSE=1), then compares results and verbose lines. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "dnnl/conf_util.h" /* CHECK_DNNL, dt_size */

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static FILE *out;

/* Deterministic values in [-1, 1), exact in bf16. */
static float value(unsigned i, unsigned seed) {
  unsigned x = (i + 1) * 2654435761u ^ (seed * 40503u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return (float)((int)(x % 256) - 128) / 128.0f;
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A memory for md filled with values of `seed` (its whole span, padding
 * and gaps included). */
static dnnl_memory_t make_memory(const dnnl_memory_desc_t *md, unsigned seed) {
  dnnl_memory_t m;
  CHECK_DNNL(dnnl_memory_create(&m, md, engine, DNNL_MEMORY_ALLOCATE));
  void *p;
  CHECK_DNNL(dnnl_memory_get_data_handle(m, &p));
  const size_t n = dnnl_memory_desc_get_size(md) / dt_size(md->data_type);
  for (size_t i = 0; i < n; ++i) {
    const float v = value((unsigned)i, seed);
    switch (md->data_type) {
      case dnnl_f32: ((float *)p)[i] = v; break;
      case dnnl_bf16: ((uint16_t *)p)[i] = to_bf16(v); break;
      case dnnl_s8: ((int8_t *)p)[i] = (int8_t)(v * 16); break;
      case dnnl_u8: ((uint8_t *)p)[i] = (uint8_t)(v * 16 + 16); break;
      case dnnl_s32: ((int32_t *)p)[i] = (int32_t)(v * 16); break;
      default: break;
    }
  }
  return m;
}

/* The memory's whole span as floats, to OUT: "<name> <tol> <count> v...". */
static void dump(const char *name, double tol, dnnl_memory_t m) {
  const dnnl_memory_desc_t *md;
  void *p;
  CHECK_DNNL(dnnl_memory_get_memory_desc(m, &md));
  CHECK_DNNL(dnnl_memory_get_data_handle(m, &p));
  const size_t n = dnnl_memory_desc_get_size(md) / dt_size(md->data_type);
  fprintf(out, "%s %g %zu", name, tol, n);
  for (size_t i = 0; i < n; ++i) {
    float v = 0;
    switch (md->data_type) {
      case dnnl_f32: v = ((float *)p)[i]; break;
      case dnnl_bf16: v = from_bf16(((uint16_t *)p)[i]); break;
      case dnnl_s32: v = (float)((int32_t *)p)[i]; break;
      case dnnl_s8: v = ((int8_t *)p)[i]; break;
      default: break;
    }
    fprintf(out, " %.9g", v);
  }
  fprintf(out, "\n");
}

static void md_init(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, dnnl_data_type_t dt,
                    dnnl_format_tag_t tag) {
  CHECK_DNNL(dnnl_memory_desc_init_by_tag(md, nd, dims, dt, tag));
}

/* On stdout, flushed, where ONEDNN_VERBOSE prints (and flushes) its lines. */
static void case_begin(const char *name) {
  printf("hcops_test,case,%s\n", name);
  fflush(stdout);
}

/* A bf16 case where the real libdnnl has no bf16 primitive on this CPU
 * (conf_library_has_bf16): said on stdout, and not run, in every run. */
static int skip_bf16(const char *name, int bf16) {
  if (!bf16 || conf_library_has_bf16()) return 0;
  printf("hcops_test,skip,%s,%s\n", name, conf_no_bf16);
  fflush(stdout);
  return 1;
}

/* A primitive from an op descriptor, through the iterator as dnnl.hpp
 * (PyTorch) builds it. */
static dnnl_primitive_t make_primitive(const void *op_desc, const_dnnl_primitive_attr_t attr,
                                       const_dnnl_primitive_desc_t hint) {
  dnnl_primitive_desc_iterator_t it;
  CHECK_DNNL(dnnl_primitive_desc_iterator_create(&it, op_desc, attr, engine, hint));
  dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
  dnnl_primitive_t p;
  CHECK_DNNL(dnnl_primitive_create(&p, pd));
  CHECK_DNNL(dnnl_primitive_desc_destroy(pd));
  CHECK_DNNL(dnnl_primitive_desc_iterator_destroy(it));
  return p;
}

static void execute(dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args) {
  CHECK_DNNL(dnnl_primitive_execute(p, stream, nargs, args));
  CHECK_DNNL(dnnl_stream_wait(stream));
}

struct Post {
  float oscale;           /* 1: none */
  int runtime_oscale;     /* the scale given at execute */
  float sum;              /* 0: none */
  dnnl_alg_kind_t eltwise; /* dnnl_alg_kind_undef: none */
  float alpha, beta, escale;
  int binary;             /* an add of a 1 x N f32 tensor (not claimed) */
};

static dnnl_primitive_attr_t make_attr(const struct Post *po, const dnnl_memory_desc_t *binary_md) {
  dnnl_primitive_attr_t attr;
  CHECK_DNNL(dnnl_primitive_attr_create(&attr));
  if (!po) return attr;
  if (po->runtime_oscale) {
    const float rt = DNNL_RUNTIME_F32_VAL;
    CHECK_DNNL(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &rt));
  } else if (po->oscale != 1.0f) {
    CHECK_DNNL(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &po->oscale));
  }
  dnnl_post_ops_t ops;
  CHECK_DNNL(dnnl_post_ops_create(&ops));
  if (po->sum != 0.0f) CHECK_DNNL(dnnl_post_ops_append_sum(ops, po->sum));
  if (po->eltwise != dnnl_alg_kind_undef)
    CHECK_DNNL(dnnl_post_ops_append_eltwise(ops, po->escale, po->eltwise, po->alpha, po->beta));
  if (po->binary) CHECK_DNNL(dnnl_post_ops_append_binary(ops, dnnl_binary_add, binary_md));
  CHECK_DNNL(dnnl_primitive_attr_set_post_ops(attr, ops));
  CHECK_DNNL(dnnl_post_ops_destroy(ops));
  return attr;
}

/* One matmul: src, weights, optional bias, dst as given; dst starts with
 * values (for a sum). Runtime: the primitive is made with every dim of
 * src, weights and dst DNNL_RUNTIME_DIM_VAL, the memories with the real
 * ones. */
static void matmul(const char *name, double tol, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *wei,
                   const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst, const struct Post *po,
                   int runtime) {
  case_begin(name);
  if (skip_bf16(name, src->data_type == dnnl_bf16 || wei->data_type == dnnl_bf16 || dst->data_type == dnnl_bf16))
    return;
  dnnl_memory_desc_t bin_md;
  dnnl_dims_t bin_dims = {1, dst->dims[dst->ndims - 1]};
  md_init(&bin_md, 2, bin_dims, dnnl_f32, dnnl_ab);
  dnnl_memory_desc_t s = *src, w = *wei, d = *dst;
  if (runtime) {
    dnnl_dims_t rt;
    for (int i = 0; i < DNNL_MAX_NDIMS; ++i) rt[i] = DNNL_RUNTIME_DIM_VAL;
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&s, 2, rt, src->data_type, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&w, 2, rt, wei->data_type, dnnl_ab));
    CHECK_DNNL(dnnl_memory_desc_init_by_tag(&d, 2, rt, dst->data_type, dnnl_ab));
  }
  dnnl_matmul_desc_t op;
  CHECK_DNNL(dnnl_matmul_desc_init(&op, &s, &w, bias, &d));
  dnnl_primitive_attr_t attr = make_attr(po, &bin_md);
  dnnl_primitive_t p = make_primitive(&op, attr, NULL);
  dnnl_memory_t ms = make_memory(src, 1), mw = make_memory(wei, 2), md = make_memory(dst, 3);
  dnnl_memory_t mb = bias ? make_memory(bias, 4) : NULL, mbin = make_memory(&bin_md, 5), mscale = NULL;
  dnnl_exec_arg_t args[8] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
  int nargs = 3;
  if (mb) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb};
  if (po && po->binary) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mbin};
  if (po && po->runtime_oscale) {
    dnnl_memory_desc_t sc;
    dnnl_dims_t one = {1};
    md_init(&sc, 1, one, dnnl_f32, dnnl_a);
    mscale = make_memory(&sc, 6);
    void *h;
    CHECK_DNNL(dnnl_memory_get_data_handle(mscale, &h));
    *(float *)h = po->oscale;
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_OUTPUT_SCALES, mscale};
  }
  execute(p, nargs, args);
  dump(name, tol, md);
  CHECK_DNNL(dnnl_primitive_destroy(p));
  CHECK_DNNL(dnnl_primitive_attr_destroy(attr));
  dnnl_memory_t all[] = {ms, mw, md, mb, mbin, mscale};
  for (unsigned i = 0; i < sizeof all / sizeof *all; ++i)
    if (all[i]) CHECK_DNNL(dnnl_memory_destroy(all[i]));
}

static void md_strides(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, dnnl_data_type_t dt,
                       const dnnl_dim_t *strides) {
  CHECK_DNNL(dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides));
}

static void matmul_cases(void) {
  dnnl_memory_desc_t s, w, b, d;
  const dnnl_dim_t M = 19, K = 37, N = 11;
  {
    dnnl_dims_t ds = {M, K}, dw = {K, N}, dd = {M, N};
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ab), md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
    matmul("matmul_f32", 1e-5, &s, &w, NULL, &d, NULL, 0);
    matmul("matmul_f32_runtime_dims", 1e-5, &s, &w, NULL, &d, NULL, 1);
    /* Transposed src and weights, a dst with a leading dimension. */
    dnnl_dims_t ss = {1, M + 3}, sw = {1, K}, sd = {N + 5, 1};
    md_strides(&s, 2, ds, dnnl_f32, ss), md_strides(&w, 2, dw, dnnl_f32, sw), md_strides(&d, 2, dd, dnnl_f32, sd);
    matmul("matmul_f32_strided", 1e-5, &s, &w, NULL, &d, NULL, 0);
    /* Column-major dst. */
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ba), md_init(&d, 2, dd, dnnl_f32, dnnl_ba);
    matmul("matmul_f32_dst_ba", 1e-5, &s, &w, NULL, &d, NULL, 0);
    /* As PyTorch builds a bf16 Linear under autocast. */
    md_init(&s, 2, ds, dnnl_bf16, dnnl_ab), md_init(&w, 2, dw, dnnl_bf16, dnnl_ba);
    md_init(&d, 2, dd, dnnl_bf16, dnnl_ab);
    struct Post sum = {1, 0, 1.0f, dnnl_alg_kind_undef, 0, 0, 1, 0};
    matmul("matmul_bf16_sum", 2e-2, &s, &w, NULL, &d, &sum, 0);
    md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
    matmul("matmul_bf16_f32", 1e-5, &s, &w, NULL, &d, NULL, 0);
  }
  {
    /* Batched, weights broadcast over the first batch dim. */
    dnnl_dims_t ds = {2, 3, M, K}, dw = {1, 3, K, N}, dd = {2, 3, M, N};
    md_init(&s, 4, ds, dnnl_f32, dnnl_abcd), md_init(&w, 4, dw, dnnl_f32, dnnl_abdc);
    md_init(&d, 4, dd, dnnl_f32, dnnl_abcd);
    matmul("matmul_batched_broadcast", 1e-5, &s, &w, NULL, &d, NULL, 0);
    /* src broadcast instead, in bf16. */
    dnnl_dims_t ds1 = {1, 3, M, K}, dw1 = {2, 3, K, N};
    md_init(&s, 4, ds1, dnnl_bf16, dnnl_abcd), md_init(&w, 4, dw1, dnnl_bf16, dnnl_abcd);
    md_init(&d, 4, dd, dnnl_bf16, dnnl_abcd);
    matmul("matmul_batched_src_broadcast_bf16", 2e-2, &s, &w, NULL, &d, NULL, 0);
    /* Batches that fold into M: weights broadcast over all of them. */
    dnnl_dims_t dw2 = {1, 1, K, N};
    md_init(&s, 4, ds, dnnl_f32, dnnl_abcd), md_init(&w, 4, dw2, dnnl_f32, dnnl_abcd);
    md_init(&d, 4, dd, dnnl_f32, dnnl_abcd);
    matmul("matmul_batched_fold", 1e-5, &s, &w, NULL, &d, NULL, 0);
  }
  {
    /* Attributes, one by one, then all together. */
    dnnl_dims_t ds = {M, K}, dw = {K, N}, dd = {M, N}, dbn = {1, N}, dbm = {M, 1};
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ab), md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
    md_init(&b, 2, dbn, dnnl_f32, dnnl_ab);
    matmul("matmul_bias_n", 1e-5, &s, &w, &b, &d, NULL, 0);
    md_init(&b, 2, dbm, dnnl_f32, dnnl_ab);
    matmul("matmul_bias_m", 1e-5, &s, &w, &b, &d, NULL, 0);
    md_init(&s, 2, ds, dnnl_bf16, dnnl_ab), md_init(&w, 2, dw, dnnl_bf16, dnnl_ab), md_init(&b, 2, dbn, dnnl_bf16, dnnl_ab);
    matmul("matmul_bias_bf16", 1e-5, &s, &w, &b, &d, NULL, 0);
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ab), md_init(&b, 2, dbn, dnnl_f32, dnnl_ab);
    struct Post os = {0.5f, 0, 0, dnnl_alg_kind_undef, 0, 0, 1, 0};
    matmul("matmul_oscale", 1e-5, &s, &w, &b, &d, &os, 0);
    struct Post rt = {0.25f, 1, 0, dnnl_alg_kind_undef, 0, 0, 1, 0};
    matmul("matmul_runtime_oscale", 1e-5, &s, &w, &b, &d, &rt, 0);
    struct Post sum = {1, 0, 0.5f, dnnl_alg_kind_undef, 0, 0, 1, 0};
    matmul("matmul_sum", 1e-5, &s, &w, &b, &d, &sum, 0);
    struct Post relu = {1, 0, 0, dnnl_eltwise_relu, 0.1f, 0, 1, 0};
    matmul("matmul_relu", 1e-5, &s, &w, &b, &d, &relu, 0);
    struct Post gt = {1, 0, 0, dnnl_eltwise_gelu_tanh, 0, 0, 1, 0};
    matmul("matmul_gelu_tanh", 1e-5, &s, &w, &b, &d, &gt, 0);
    struct Post ge = {1, 0, 0, dnnl_eltwise_gelu_erf, 0, 0, 1, 0};
    matmul("matmul_gelu_erf", 1e-5, &s, &w, &b, &d, &ge, 0);
    struct Post sw = {1, 0, 0, dnnl_eltwise_swish, 1.5f, 0, 1, 0};
    matmul("matmul_swish", 1e-5, &s, &w, &b, &d, &sw, 0);
    struct Post all = {0.5f, 0, 0.25f, dnnl_eltwise_relu, 0.1f, 0, 2.0f, 0};
    matmul("matmul_all_attributes", 1e-5, &s, &w, &b, &d, &all, 0);
    /* K = 0: dst is what the bias and post-ops make of zero. (With a
     * row-major dst, libdnnl 2.6's brgemm matmul dies of SIGFPE at K = 0:
     * a column-major one goes to its reference matmul.) */
    dnnl_dims_t ds0 = {M, 0}, dw0 = {0, N};
    md_init(&s, 2, ds0, dnnl_f32, dnnl_ab), md_init(&w, 2, dw0, dnnl_f32, dnnl_ab);
    md_init(&d, 2, dd, dnnl_f32, dnnl_ba);
    matmul("matmul_k0", 1e-5, &s, &w, &b, &d, &all, 0);
  }
  {
    /* Not claimed: they must leave no hcops line and give libdnnl's results. */
    dnnl_dims_t ds = {M, K}, dw = {K, N}, dd = {M, N};
    md_init(&s, 2, ds, dnnl_s8, dnnl_ab), md_init(&w, 2, dw, dnnl_s8, dnnl_ab), md_init(&d, 2, dd, dnnl_s32, dnnl_ab);
    matmul("unclaimed_int8", 0, &s, &w, NULL, &d, NULL, 0);
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_BA16a16b);
    md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
    matmul("unclaimed_blocked", 1e-5, &s, &w, NULL, &d, NULL, 0);
    md_init(&w, 2, dw, dnnl_f32, dnnl_ab);
    struct Post bin = {1, 0, 0, dnnl_alg_kind_undef, 0, 0, 1, 1};
    matmul("unclaimed_binary", 1e-5, &s, &w, NULL, &d, &bin, 0);
  }
}

/* An inner product in `prop`: src N x IC x 3 x 2 (nchw) or N x IC, weights
 * alike, bias OC; the output memory dumped (and diff_bias). */
static void inner_product(const char *name, double tol, dnnl_prop_kind_t prop, int spatial, dnnl_data_type_t in,
                          dnnl_data_type_t outt, int with_bias, const struct Post *po) {
  case_begin(name);
  if (skip_bf16(name, in == dnnl_bf16 || outt == dnnl_bf16)) return;
  const dnnl_dim_t N = 13, IC = 7, OC = 9;
  dnnl_dims_t ds4 = {N, IC, 3, 2}, dw4 = {OC, IC, 3, 2}, ds2 = {N, IC * 6}, dw2 = {OC, IC * 6};
  dnnl_dims_t db = {OC}, dd = {N, OC};
  dnnl_memory_desc_t s, w, b, d;
  const int fwd = prop == dnnl_forward_training || prop == dnnl_forward_inference;
  const int bwd_w = prop == dnnl_backward_weights;
  /* The data type of src, weights, dst: the output one is `outt`. */
  dnnl_data_type_t st = prop == dnnl_backward_data ? outt : in, wt = bwd_w ? outt : in, dt = fwd ? outt : in;
  if (spatial) md_init(&s, 4, ds4, st, dnnl_abcd), md_init(&w, 4, dw4, wt, dnnl_abcd);
  else md_init(&s, 2, ds2, st, dnnl_ab), md_init(&w, 2, dw2, wt, dnnl_ab);
  md_init(&b, 1, db, dnnl_f32, dnnl_a);
  md_init(&d, 2, dd, dt, dnnl_ab);
  dnnl_inner_product_desc_t op;
  dnnl_primitive_desc_t hint = NULL;
  {
    dnnl_inner_product_desc_t f;
    CHECK_DNNL(dnnl_inner_product_forward_desc_init(&f, dnnl_forward_training, &s, &w, with_bias ? &b : NULL, &d));
    CHECK_DNNL(dnnl_primitive_desc_create(&hint, &f, NULL, engine, NULL));
  }
  if (fwd) CHECK_DNNL(dnnl_inner_product_forward_desc_init(&op, prop, &s, &w, with_bias ? &b : NULL, &d));
  else if (bwd_w) CHECK_DNNL(dnnl_inner_product_backward_weights_desc_init(&op, &s, &w, with_bias ? &b : NULL, &d));
  else CHECK_DNNL(dnnl_inner_product_backward_data_desc_init(&op, &s, &w, &d));
  dnnl_primitive_attr_t attr = make_attr(po, NULL);
  dnnl_primitive_t p = make_primitive(&op, attr, fwd ? NULL : hint);
  dnnl_memory_t ms = make_memory(&s, 1), mw = make_memory(&w, 2), mb = make_memory(&b, 4), md = make_memory(&d, 3);
  dnnl_exec_arg_t args[4];
  int nargs = 0;
  dnnl_memory_t result = NULL;
  if (fwd) {
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ms};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mw};
    if (with_bias) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, mb};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, md};
    result = md;
  } else if (bwd_w) {
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ms};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, md};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, mw};
    if (with_bias) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, mb};
    result = mw;
  } else {
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, md};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mw};
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, ms};
    result = ms;
  }
  execute(p, nargs, args);
  dump(name, tol, result);
  if (bwd_w && with_bias) {
    char bname[128];
    snprintf(bname, sizeof bname, "%s_diff_bias", name);
    dump(bname, tol, mb);
  }
  CHECK_DNNL(dnnl_primitive_destroy(p));
  CHECK_DNNL(dnnl_primitive_desc_destroy(hint));
  CHECK_DNNL(dnnl_primitive_attr_destroy(attr));
  dnnl_memory_t all[] = {ms, mw, mb, md};
  for (unsigned i = 0; i < 4; ++i) CHECK_DNNL(dnnl_memory_destroy(all[i]));
}

static void inner_product_cases(void) {
  struct Post gelu = {1, 0, 0.5f, dnnl_eltwise_gelu_erf, 0, 0, 1, 0};
  inner_product("ip_forward_training", 1e-5, dnnl_forward_training, 1, dnnl_f32, dnnl_f32, 1, NULL);
  inner_product("ip_forward_inference_bf16", 2e-2, dnnl_forward_inference, 0, dnnl_bf16, dnnl_bf16, 1, &gelu);
  inner_product("ip_backward_data", 1e-5, dnnl_backward_data, 1, dnnl_f32, dnnl_f32, 0, NULL);
  inner_product("ip_backward_data_bf16", 2e-2, dnnl_backward_data, 0, dnnl_bf16, dnnl_bf16, 0, NULL);
  inner_product("ip_backward_weights_bias", 1e-5, dnnl_backward_weights, 1, dnnl_f32, dnnl_f32, 1, NULL);
  inner_product("ip_backward_weights_bf16", 2e-2, dnnl_backward_weights, 0, dnnl_bf16, dnnl_bf16, 1, NULL);
  inner_product("ip_backward_weights_nobias", 1e-5, dnnl_backward_weights, 0, dnnl_f32, dnnl_f32, 0, NULL);
}

/* An execute without its weights returns what libdnnl returns (and writes
 * nothing). */
static void missing_argument(void) {
  case_begin("missing_weights");
  dnnl_memory_desc_t s, w, d;
  dnnl_dims_t ds = {4, 5}, dw = {5, 6}, dd = {4, 6};
  md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ab), md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
  dnnl_matmul_desc_t op;
  CHECK_DNNL(dnnl_matmul_desc_init(&op, &s, &w, NULL, &d));
  dnnl_primitive_t p = make_primitive(&op, NULL, NULL);
  dnnl_memory_t ms = make_memory(&s, 1), md = make_memory(&d, 3);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}};
  const dnnl_status_t st = dnnl_primitive_execute(p, stream, 2, args);
  dnnl_stream_wait(stream);
  fprintf(out, "missing_weights_status 0 1 %d\n", (int)st);
  dump("missing_weights_dst", 0, md);
  CHECK_DNNL(dnnl_primitive_destroy(p));
  CHECK_DNNL(dnnl_memory_destroy(ms));
  CHECK_DNNL(dnnl_memory_destroy(md));
}

/* Two threads creating, executing and destroying matmuls of their own
 * shapes at once; each keeps its last result. */
#define CYCLES 40
static float thread_result[2][64 * 64];

static void *thread_cycles(void *arg) {
  const int t = (int)(intptr_t)arg;
  for (int c = 0; c < CYCLES; ++c) {
    const dnnl_dim_t M = 8 + t * 16 + c % 5, K = 16 + c % 7, N = 24 - t * 8 + c % 3;
    dnnl_memory_desc_t s, w, d;
    dnnl_dims_t ds = {M, K}, dw = {K, N}, dd = {M, N};
    md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, t ? dnnl_ba : dnnl_ab);
    md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t op;
    CHECK_DNNL(dnnl_matmul_desc_init(&op, &s, &w, NULL, &d));
    dnnl_primitive_t p = make_primitive(&op, NULL, NULL);
    dnnl_memory_t ms = make_memory(&s, 1 + c), mw = make_memory(&w, 2 + c), md = make_memory(&d, 3);
    dnnl_stream_t st;
    CHECK_DNNL(dnnl_stream_create(&st, engine, dnnl_stream_default_flags));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
    CHECK_DNNL(dnnl_primitive_execute(p, st, 3, args));
    CHECK_DNNL(dnnl_stream_wait(st));
    void *h;
    CHECK_DNNL(dnnl_memory_get_data_handle(md, &h));
    memcpy(thread_result[t], h, (size_t)(M * N) * sizeof(float));
    CHECK_DNNL(dnnl_stream_destroy(st));
    CHECK_DNNL(dnnl_primitive_destroy(p));
    CHECK_DNNL(dnnl_memory_destroy(ms));
    CHECK_DNNL(dnnl_memory_destroy(mw));
    CHECK_DNNL(dnnl_memory_destroy(md));
  }
  return NULL;
}

static void two_threads(void) {
  case_begin("two_threads");
  pthread_t th[2];
  for (int t = 0; t < 2; ++t)
    if (pthread_create(&th[t], NULL, thread_cycles, (void *)(intptr_t)t)) exit(1);
  for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
  for (int t = 0; t < 2; ++t) {
    fprintf(out, "two_threads_%d 1e-05 %d", t, 64 * 64);
    for (int i = 0; i < 64 * 64; ++i) fprintf(out, " %.9g", thread_result[t][i]);
    fprintf(out, "\n");
  }
}

/* fork() while another thread creates, executes and destroys primitives:
 * each child executes a primitive made before the fork (the same result as
 * the parent's) and makes, executes and destroys one of its own; a child
 * that inherited the side table's lock held would hang there. */
static volatile int cycling;

static void *cycle_until_stopped(void *arg) {
  (void)arg;
  while (cycling) thread_cycles((void *)(intptr_t)1);
  return NULL;
}

static int same_matmul(dnnl_primitive_t p, dnnl_memory_t ms, dnnl_memory_t mw, dnnl_memory_t md, const float *want,
                       size_t n) {
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
  if (dnnl_primitive_execute(p, stream, 3, args) != dnnl_success || dnnl_stream_wait(stream) != dnnl_success) return 0;
  void *h;
  if (dnnl_memory_get_data_handle(md, &h) != dnnl_success) return 0;
  return memcmp(h, want, n * sizeof(float)) == 0;
}

static void fork_while_threads_work(void) {
  case_begin("fork");
  /* Under QEMU's user-mode emulation (make check-aarch64) the fork of a
   * process with running threads can deadlock in QEMU itself (its own locks
   * copied held), before the child runs any of this code. */
  const char *emulated = getenv("HCOPS_TEST_EMULATED");
  if (emulated && strcmp(emulated, "yes") == 0) {
    printf("hcops_test,skip,fork,a fork with threads running deadlocks QEMU's user-mode emulation\n");
    fflush(stdout);
    return;
  }
  dnnl_memory_desc_t s, w, d;
  dnnl_dims_t ds = {21, 13}, dw = {13, 17}, dd = {21, 17};
  md_init(&s, 2, ds, dnnl_f32, dnnl_ab), md_init(&w, 2, dw, dnnl_f32, dnnl_ab), md_init(&d, 2, dd, dnnl_f32, dnnl_ab);
  dnnl_matmul_desc_t op;
  CHECK_DNNL(dnnl_matmul_desc_init(&op, &s, &w, NULL, &d));
  dnnl_primitive_t p = make_primitive(&op, NULL, NULL);
  dnnl_memory_t ms = make_memory(&s, 1), mw = make_memory(&w, 2), md = make_memory(&d, 3);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
  execute(p, 3, args);
  static float want[21 * 17];
  void *h;
  CHECK_DNNL(dnnl_memory_get_data_handle(md, &h));
  memcpy(want, h, sizeof want);
  dump("fork_parent", 1e-5, md);

  cycling = 1;
  pthread_t th;
  if (pthread_create(&th, NULL, cycle_until_stopped, NULL)) exit(1);
  int bad = 0;
  for (int i = 0; i < 4; ++i) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) exit(1);
    if (pid == 0) {
      int ok = same_matmul(p, ms, mw, md, want, 21 * 17);
      dnnl_primitive_t q = make_primitive(&op, NULL, NULL);
      ok = ok && same_matmul(q, ms, mw, md, want, 21 * 17) && dnnl_primitive_destroy(q) == dnnl_success;
      _exit(ok ? 0 : 1);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
  }
  cycling = 0;
  pthread_join(th, NULL);
  fprintf(out, "fork_children_failed 0 1 %d\n", bad);
  CHECK_DNNL(dnnl_primitive_destroy(p));
  CHECK_DNNL(dnnl_memory_destroy(ms));
  CHECK_DNNL(dnnl_memory_destroy(mw));
  CHECK_DNNL(dnnl_memory_destroy(md));
}

/* Each line of OUT against REF's: same names and counts, values within
 * tol * max |ref| of the case (tol 0: equal). */
static int compare(const char *ref_path, const char *out_path) {
  FILE *r = fopen(ref_path, "r"), *o = fopen(out_path, "r");
  if (!r || !o) return fprintf(stderr, "test_dnnl_prim: cannot open the results\n"), 1;
  char rn[128], on[128];
  double rtol, otol;
  size_t rc, oc;
  int failures = 0, cases = 0;
  while (fscanf(r, "%127s %lg %zu", rn, &rtol, &rc) == 3) {
    if (fscanf(o, "%127s %lg %zu", on, &otol, &oc) != 3 || strcmp(rn, on) || rc != oc) {
      fprintf(stderr, "FAIL %s: the runs differ in their cases\n", rn);
      return 1;
    }
    double *rv = malloc((rc + 1) * sizeof *rv), *ov = malloc((rc + 1) * sizeof *ov), maxabs = 0, worst = 0;
    for (size_t i = 0; i < rc; ++i) {
      if (fscanf(r, "%lg", &rv[i]) != 1 || fscanf(o, "%lg", &ov[i]) != 1) return 1;
      if (fabs(rv[i]) > maxabs) maxabs = fabs(rv[i]);
    }
    size_t at = 0;
    for (size_t i = 0; i < rc; ++i) {
      const double e = isnan(rv[i]) != isnan(ov[i]) ? INFINITY : isnan(rv[i]) ? 0 : fabs(rv[i] - ov[i]);
      if (e > worst) worst = e, at = i;
    }
    const int ok = worst <= rtol * (maxabs > 1 ? maxabs : 1);
    printf("%s %s: %zu values, max |diff| %.3g (at %zu: %.9g against %.9g), tolerance %.3g\n", ok ? "ok" : "FAIL", rn,
           rc, worst, at, rc ? ov[at] : 0.0, rc ? rv[at] : 0.0, rtol * (maxabs > 1 ? maxabs : 1));
    failures += !ok;
    ++cases;
    free(rv);
    free(ov);
  }
  printf("%d cases, %d failed\n", cases, failures);
  return failures || cases == 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "compare")) return compare(argv[2], argv[3]);
  if (argc != 3 || strcmp(argv[1], "run")) {
    fprintf(stderr, "usage: test_dnnl_prim run OUT | compare REF OUT\n");
    return 2;
  }
  out = fopen(argv[2], "w");
  if (!out) return 1;
  CHECK_DNNL(dnnl_engine_create(&engine, dnnl_cpu, 0));
  CHECK_DNNL(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  matmul_cases();
  inner_product_cases();
  missing_argument();
  two_threads();
  fork_while_threads_work();
  case_begin("end");
  CHECK_DNNL(dnnl_stream_destroy(stream));
  CHECK_DNNL(dnnl_engine_destroy(engine));
  return fclose(out) != 0;
}
