/* See conf_matmul.h. oneDNN 2.6's matmul computes, per dst element,
 *   x = oscale * (sum_k (src - src_zp) wei + bias), then the post-ops in
 * order (sum: x += scale * dst_old; eltwise: x = scale * act(x); binary
 * add: x += src1), then stores x in dst's datatype; src and wei batch dims
 * of size 1 broadcast, and so do bias dims of size 1. */
#include "conf_matmul.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const dnnl_format_tag_t plain_tags[2][3] = {{dnnl_ab, dnnl_abc, dnnl_abcd}, {dnnl_ba, dnnl_acb, dnnl_abdc}};

/* Strides of (batch..., R, C), C contiguous unless trans (then R), leading
 * dimension padded by ld_pad, innermost batch stride by batch_pad. */
static void operand_strides(int nd, const dnnl_dim_t *dims, int trans, dnnl_dim_t ld_pad, dnnl_dim_t batch_pad,
                            dnnl_dim_t *strides) {
  dnnl_dim_t R = dims[nd - 2], C = dims[nd - 1];
  dnnl_dim_t ld = (trans ? (R > 0 ? R : 1) : (C > 0 ? C : 1)) + ld_pad;
  strides[nd - 1] = trans ? ld : 1;
  strides[nd - 2] = trans ? 1 : ld;
  dnnl_dim_t s = ld * ((trans ? C : R) > 0 ? (trans ? C : R) : 1) + batch_pad;
  for (int d = nd - 3; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d] > 0 ? dims[d] : 1;
  }
}

/* The primitive's descriptor of an operand: runtime dims as
 * DNNL_RUNTIME_DIM_VAL, its strides then by tag (dense; runtime where they
 * depend on a runtime dim, as ideep makes them) or, when the execution's
 * memory has padded strides, DNNL_RUNTIME_DIM_VAL but the unit one; without
 * runtime dims, the execution's own descriptor. */
static dnnl_memory_desc_t pd_md(int nd, const dnnl_dim_t *dims, const unsigned *rt_of_dim, unsigned runtime,
                                dnnl_data_type_t dt, int trans, int padded, const dnnl_memory_desc_t *exec_md) {
  dnnl_dims_t d, st;
  int any_rt = 0;
  for (int i = 0; i < nd; ++i) {
    /* a batch dim of 1 broadcasts: it stays known */
    d[i] = (runtime & rt_of_dim[i]) && !(rt_of_dim[i] == RT_BATCH && dims[i] == 1) ? DNNL_RUNTIME_DIM_VAL : dims[i];
    if (d[i] == DNNL_RUNTIME_DIM_VAL) any_rt = 1;
  }
  if (!any_rt) return *exec_md;
  if (!padded) return md_tag(nd, d, dt, plain_tags[trans][nd - 2]);
  for (int i = 0; i < nd; ++i) st[i] = exec_md->format_desc.blocking.strides[i] == 1 ? 1 : DNNL_RUNTIME_DIM_VAL;
  return md_strided(nd, d, dt, st);
}

static void fill_for(tensor *t, uint64_t *rng) {
  switch (t->md.data_type) {
    case dnnl_s8: tensor_fill(t, rng, -5, 5); break;
    case dnnl_u8: tensor_fill(t, rng, 0, 10); break;
    default: tensor_fill(t, rng, -1, 1); break;
  }
}

static void reorder(const tensor *from, tensor *to) {
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t prim;
  CHECK_DNNL(dnnl_reorder_primitive_desc_create(&rpd, &from->md, conf_engine(), &to->md, conf_engine(), NULL));
  CHECK_DNNL(dnnl_primitive_create(&prim, rpd));
  dnnl_memory_t mf = tensor_memory(from), mt = tensor_memory(to);
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mt}};
  CHECK_DNNL(dnnl_primitive_execute(prim, conf_stream(), 2, args));
  CHECK_DNNL(dnnl_stream_wait(conf_stream()));
  dnnl_memory_destroy(mf);
  dnnl_memory_destroy(mt);
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(rpd);
}

typedef struct {
  int nd;
  dnnl_dims_t sdims, wdims, ddims, bdims;
} mm_shape;

static mm_shape shape_of(const mm_problem *p, dnnl_dim_t M, dnnl_dim_t K, dnnl_dim_t N, int batch0) {
  mm_shape s;
  s.nd = p->nbatch + 2;
  for (int i = 0; i < p->nbatch; ++i) {
    s.sdims[i] = batch0 && p->src_batch[i] != 1 ? 0 : p->src_batch[i];
    s.wdims[i] = batch0 && p->wei_batch[i] != 1 ? 0 : p->wei_batch[i];
    s.ddims[i] = s.sdims[i] != 1 ? s.sdims[i] : s.wdims[i];
  }
  int m = s.nd - 2, n = s.nd - 1;
  s.sdims[m] = M, s.sdims[n] = K;
  s.wdims[m] = K, s.wdims[n] = N;
  s.ddims[m] = M, s.ddims[n] = N;
  for (int d = 0; d < s.nd; ++d) s.bdims[d] = (p->bias_mask >> d) & 1 ? s.ddims[d] : 1;
  return s;
}

/* One execution of prim at (M, K, N); accounts the result into r. */
static void execute_once(const mm_problem *p, dnnl_primitive_t prim, const dnnl_memory_desc_t *wei_layout, mm_shape s,
                         uint64_t *rng, conf_result *r) {
  int nd = s.nd;
  dnnl_dims_t st;
  operand_strides(nd, s.sdims, p->src_trans, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t smd = md_strided(nd, s.sdims, p->sdt, st);
  operand_strides(nd, s.wdims, p->wei_trans, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t wmd = md_strided(nd, s.wdims, p->wdt, st);
  operand_strides(nd, s.ddims, 0, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t dmd = md_strided(nd, s.ddims, p->ddt, st);

  tensor src = tensor_new(&smd), wei = tensor_new(&wmd), dst = tensor_new(&dmd);
  fill_for(&src, rng);
  fill_for(&wei, rng);
  tensor wei_lib = wei; /* the weights in the library's layout, when it chose */
  if (p->wei_any) {
    wei_lib = tensor_new(wei_layout);
    reorder(&wei, &wei_lib);
  }
  int has_sum = 0;
  for (int i = 0; i < p->npo; ++i) has_sum |= p->po[i].kind == PO_SUM;
  if (has_sum) fill_for(&dst, rng);
  tensor old = tensor_new(&dmd);
  memcpy(old.data, dst.data, dst.bytes);

  tensor bias = {0}, src1 = {0}, scales = {0};
  dnnl_exec_arg_t args[9];
  int nargs = 0;
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, tensor_memory(&src)};
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, tensor_memory(&wei_lib)};
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_DST, tensor_memory(&dst)};
  if (p->bdt != dnnl_data_type_undef) {
    dnnl_memory_desc_t bmd = md_strided(nd, s.bdims, p->bdt, NULL);
    bias = tensor_new(&bmd);
    fill_for(&bias, rng);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, tensor_memory(&bias)};
  }
  for (int i = 0; i < p->npo; ++i)
    if (p->po[i].kind == PO_BINARY_ADD) {
      dnnl_memory_desc_t b1 = md_strided(nd, s.ddims, dnnl_f32, NULL);
      src1 = tensor_new(&b1);
      fill_for(&src1, rng);
      args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, tensor_memory(&src1)};
    }
  if (p->oscale_kind == OSCALE_RUNTIME) {
    dnnl_dims_t one = {1};
    dnnl_memory_desc_t scmd = md_strided(1, one, dnnl_f32, NULL);
    scales = tensor_new(&scmd);
    dnnl_dims_t zero = {0};
    tensor_set(&scales, zero, p->oscale);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_OUTPUT_SCALES, tensor_memory(&scales)};
  }

  const_dnnl_primitive_desc_t pd;
  CHECK_DNNL(dnnl_primitive_get_primitive_desc(prim, &pd));
  tensor scratch = tensor_new(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
  args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, tensor_memory(&scratch)};

  CHECK_DNNL(dnnl_primitive_execute(prim, conf_stream(), nargs, args));
  CHECK_DNNL(dnnl_stream_wait(conf_stream()));
  tensor_free(&scratch);
  r->executions++;
  if (md_nelems(&dmd) == 0) r->empty_executions++;

  /* The reference, element by element of dst. */
  dnnl_dim_t K = s.sdims[nd - 1];
  if (md_nelems(&dmd) > 0) {
    dnnl_dims_t di = {0};
    do {
      dnnl_dims_t si, wi, bi;
      for (int d = 0; d < nd - 2; ++d) {
        si[d] = s.sdims[d] == 1 ? 0 : di[d];
        wi[d] = s.wdims[d] == 1 ? 0 : di[d];
      }
      for (int d = 0; d < nd; ++d) bi[d] = s.bdims[d] == 1 ? 0 : di[d];
      si[nd - 2] = di[nd - 2];
      wi[nd - 1] = di[nd - 1];
      double acc = 0, abs_acc = 0;
      for (dnnl_dim_t k = 0; k < K; ++k) {
        si[nd - 1] = k;
        wi[nd - 2] = k;
        double a = tensor_get(&src, si) - p->src_zp, b = tensor_get(&wei, wi);
        acc += a * b;
        abs_acc += fabs(a * b);
      }
      refval v = {acc, (double)K * CONF_U * abs_acc};
      if (bias.data) v = ref_add_bias(v, tensor_get(&bias, bi));
      if (p->oscale_kind == OSCALE_PER_N) v = ref_scale(v, 0.5 + (double)(di[nd - 1] % 4) * 0.375);
      else if (p->oscale_kind != OSCALE_NONE) v = ref_scale(v, p->oscale);
      for (int i = 0; i < p->npo; ++i) {
        const post_op *po = &p->po[i];
        if (po->kind == PO_SUM) v = ref_add(v, po->scale * tensor_get(&old, di));
        if (po->kind == PO_ELTWISE) v = ref_eltwise(v, po->alg, po->alpha, po->beta, po->scale);
        if (po->kind == PO_BINARY_ADD) v = ref_add(v, tensor_get(&src1, di));
      }
      v = ref_store(v, p->ddt);
      result_account(r, tensor_get(&dst, di), v);
    } while (idx_next(nd, s.ddims, di));
  }
  if (!tensor_gaps_intact(&dst)) r->gaps_ok = r->ok = 0;
  r->digest = r->digest * 0x100000001b3ull ^ tensor_digest(&dst);

  for (int i = 0; i < nargs; ++i) dnnl_memory_destroy(args[i].memory);
  if (p->wei_any) tensor_free(&wei_lib);
  tensor_free(&src), tensor_free(&wei), tensor_free(&dst), tensor_free(&old);
  if (bias.data) tensor_free(&bias);
  if (src1.data) tensor_free(&src1);
  if (scales.data) tensor_free(&scales);
}

int mm_prepare(const mm_problem *p, mm_prepared *out) {
  out->pd = NULL, out->prim = NULL, out->skipped = NULL;
  mm_shape s = shape_of(p, p->M, p->K, p->N, 0);
  int nd = s.nd;
  dnnl_dims_t st;

  /* Which runtime flag each dim of each operand answers to. */
  unsigned rt_src[4], rt_wei[4], rt_dst[4];
  for (int d = 0; d < nd - 2; ++d) rt_src[d] = rt_wei[d] = rt_dst[d] = RT_BATCH;
  rt_src[nd - 2] = RT_M, rt_src[nd - 1] = RT_K;
  rt_wei[nd - 2] = RT_K, rt_wei[nd - 1] = RT_N;
  rt_dst[nd - 2] = RT_M, rt_dst[nd - 1] = RT_N;

  operand_strides(nd, s.sdims, p->src_trans, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t smd = md_strided(nd, s.sdims, p->sdt, st);
  operand_strides(nd, s.wdims, p->wei_trans, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t wmd = md_strided(nd, s.wdims, p->wdt, st);
  operand_strides(nd, s.ddims, 0, p->ld_pad, p->batch_pad, st);
  dnnl_memory_desc_t dmd = md_strided(nd, s.ddims, p->ddt, st);
  dnnl_memory_desc_t bmd, *bmdp = NULL;
  if (p->bdt != dnnl_data_type_undef) {
    bmd = md_strided(nd, s.bdims, p->bdt, NULL);
    /* Its dims of 1 broadcast: they stay known. */
    unsigned rt_bias[4];
    for (int d = 0; d < nd; ++d) rt_bias[d] = (p->bias_mask >> d) & 1 ? rt_dst[d] : 0;
    bmd = pd_md(nd, s.bdims, rt_bias, p->runtime, p->bdt, 0, 0, &bmd);
    bmdp = &bmd;
  }
  int padded = p->ld_pad || p->batch_pad;
  smd = pd_md(nd, s.sdims, rt_src, p->runtime, p->sdt, p->src_trans, padded, &smd);
  wmd = pd_md(nd, s.wdims, rt_wei, p->runtime, p->wdt, p->wei_trans, padded, &wmd);
  dmd = pd_md(nd, s.ddims, rt_dst, p->runtime, p->ddt, 0, padded, &dmd);
  if (p->wei_any) wmd = md_tag(nd, s.wdims, p->wdt, dnnl_format_tag_any);

  float scales[4096];
  int nscales = 0, mask = 0;
  if (p->oscale_kind == OSCALE_COMMON) nscales = 1, scales[0] = p->oscale;
  if (p->oscale_kind == OSCALE_RUNTIME) nscales = 1, scales[0] = DNNL_RUNTIME_F32_VAL;
  if (p->oscale_kind == OSCALE_PER_N) {
    nscales = (int)p->N, mask = 1 << (nd - 1);
    for (int n = 0; n < nscales; ++n) scales[n] = 0.5f + (float)(n % 4) * 0.375f;
  }
  dnnl_memory_desc_t src1_md = md_strided(nd, s.ddims, dnnl_f32, NULL);
  dnnl_primitive_attr_t attr = make_attr(p->po, p->npo, nscales, mask, scales, &src1_md);
  if (p->src_zp) CHECK_DNNL(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &p->src_zp));
  /* A scratchpad per execution, as PyTorch gives one: libdnnl's own (mode
   * library) belongs to the primitive, and two threads executing a shared
   * primitive at once would then share it (oneDNN 2.6 without
   * DNNL_ENABLE_CONCURRENT_EXEC, Debian's build: wrong results, stock). */
  CHECK_DNNL(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));

  dnnl_matmul_desc_t desc;
  if (dnnl_matmul_desc_init(&desc, &smd, &wmd, bmdp, &dmd) != dnnl_success) {
    dnnl_primitive_attr_destroy(attr);
    out->skipped = "dnnl_matmul_desc_init refused the problem";
    return 0;
  }
  dnnl_status_t status;
  dnnl_primitive_desc_t pd = make_pd(&desc, attr, NULL, p->use_iterator, &status);
  dnnl_primitive_attr_destroy(attr);
  if (!pd) {
    const int bf16 = p->sdt == dnnl_bf16 || p->wdt == dnnl_bf16 || p->ddt == dnnl_bf16;
    out->skipped = bf16 && !conf_library_has_bf16() ? conf_no_bf16 : "no implementation in the library";
    return 0;
  }
  out->pd = pd;
  out->wei_layout = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t *w = &out->wei_layout;
  if (p->wei_any && w->format_kind == dnnl_blocked && w->format_desc.blocking.inner_nblks == 0)
    out->skipped = "the library chose a plain weights layout";
  CHECK_DNNL(dnnl_primitive_create(&out->prim, pd));
  return out->skipped == NULL;
}

void mm_execute(const mm_problem *p, const mm_prepared *pp, uint64_t seed, conf_result *r) {
  uint64_t rng = seed;
  execute_once(p, pp->prim, &pp->wei_layout, shape_of(p, p->M, p->K, p->N, 0), &rng, r);
  if (p->runtime) execute_once(p, pp->prim, &pp->wei_layout, shape_of(p, p->M2, p->K2, p->N2, p->batch0_2), &rng, r);
}

void mm_release(mm_prepared *pp) {
  if (pp->prim) CHECK_DNNL(dnnl_primitive_destroy(pp->prim));
  if (pp->pd) CHECK_DNNL(dnnl_primitive_desc_destroy(pp->pd));
  pp->prim = NULL, pp->pd = NULL;
}

void run_matmul(const mm_problem *p, uint64_t seed, conf_result *r) {
  result_init(r);
  mm_prepared pp;
  if (mm_prepare(p, &pp)) {
    r->primitive = pp.prim;
    mm_execute(p, &pp, seed, r);
  } else {
    r->skipped = pp.skipped;
    r->ok = pp.skipped == conf_no_bf16;
  }
  mm_release(&pp);
}
