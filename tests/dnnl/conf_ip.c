/* See conf_ip.h. With i running over a src row's C*H*W elements (in nchw
 * order, which oihw's i*h*w matches):
 *   forward:          dst[n][o] = sum_i src[n][i] wei[o][i] + bias[o], then
 *                     the post-ops;
 *   backward_data:    diff_src[n][i] = sum_o diff_dst[n][o] wei[o][i];
 *   backward_weights: diff_wei[o][i] = sum_n diff_dst[n][o] src[n][i],
 *                     diff_bias[o] = sum_n diff_dst[n][o]. */
#include "conf_ip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int nd;
  dnnl_dims_t src, wei, dst;
  dnnl_dim_t spatial; /* H*W (1 for 2-D) */
} ip_shape;

static ip_shape shape_of(const ip_problem *p) {
  ip_shape s;
  s.nd = p->H ? 4 : 2;
  s.src[0] = p->MB, s.src[1] = p->IC;
  s.wei[0] = p->OC, s.wei[1] = p->IC;
  s.dst[0] = p->MB, s.dst[1] = p->OC;
  s.spatial = 1;
  if (p->H) {
    s.src[2] = s.wei[2] = p->H;
    s.src[3] = s.wei[3] = p->W;
    s.spatial = p->H * p->W;
  }
  return s;
}

/* The 2-D index (row, flat i) as the tensor's own index. */
static void unflatten(const ip_shape *s, dnnl_dim_t row, dnnl_dim_t i, dnnl_dim_t *idx) {
  idx[0] = row;
  if (s->nd == 2) {
    idx[1] = i;
    return;
  }
  idx[1] = i / s->spatial;
  idx[2] = (i % s->spatial) / s->src[3];
  idx[3] = i % s->src[3];
}

static double at(const tensor *t, const ip_shape *s, dnnl_dim_t row, dnnl_dim_t i) {
  dnnl_dims_t idx;
  unflatten(s, row, i, idx);
  return tensor_get(t, idx);
}
static double at2(const tensor *t, dnnl_dim_t row, dnnl_dim_t col) {
  dnnl_dims_t idx = {row, col};
  return tensor_get(t, idx);
}

void run_ip(const ip_problem *p, uint64_t seed, conf_result *r) {
  result_init(r);
  uint64_t rng = seed;
  ip_shape s = shape_of(p);
  dnnl_format_tag_t act_tag = s.nd == 4 ? dnnl_nchw : dnnl_nc, wei_tag = s.nd == 4 ? dnnl_oihw : dnnl_oi;
  int bwd = p->dir == IP_BWD_DATA || p->dir == IP_BWD_WEIGHTS;
  dnnl_memory_desc_t smd = md_tag(s.nd, s.src, p->sdt, act_tag), wmd = md_tag(s.nd, s.wei, p->wdt, wei_tag),
                     dmd = md_tag(2, s.dst, p->ddt, dnnl_nc), bmd, *bmdp = NULL;
  if (p->bdt != dnnl_data_type_undef) {
    bmd = md_tag(1, &p->OC, p->bdt, dnnl_a);
    bmdp = &bmd;
  }

  /* Backward needs the forward-training primitive descriptor as its hint. */
  dnnl_primitive_desc_t hint = NULL;
  dnnl_status_t status;
  if (bwd) {
    dnnl_data_type_t low = p->sdt == dnnl_bf16 || p->wdt == dnnl_bf16 || p->ddt == dnnl_bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t hs = md_tag(s.nd, s.src, low, act_tag), hw = md_tag(s.nd, s.wei, low, wei_tag),
                       hd = md_tag(2, s.dst, low, dnnl_nc);
    dnnl_inner_product_desc_t fwd;
    CHECK_DNNL(dnnl_inner_product_forward_desc_init(&fwd, dnnl_forward_training, &hs, &hw, NULL, &hd));
    hint = make_pd(&fwd, NULL, NULL, 0, &status);
    if (!hint) {
      r->skipped = low == dnnl_bf16 && !conf_library_has_bf16() ? conf_no_bf16 : "no forward implementation for the hint";
      r->ok = r->skipped == conf_no_bf16;
      return;
    }
  }
  dnnl_inner_product_desc_t desc;
  switch (p->dir) {
    case IP_FWD_TRAINING:
    case IP_FWD_INFERENCE:
      CHECK_DNNL(dnnl_inner_product_forward_desc_init(
          &desc, p->dir == IP_FWD_TRAINING ? dnnl_forward_training : dnnl_forward_inference, &smd, &wmd, bmdp, &dmd));
      break;
    case IP_BWD_DATA: CHECK_DNNL(dnnl_inner_product_backward_data_desc_init(&desc, &smd, &wmd, &dmd)); break;
    case IP_BWD_WEIGHTS: CHECK_DNNL(dnnl_inner_product_backward_weights_desc_init(&desc, &smd, &wmd, bmdp, &dmd)); break;
  }
  dnnl_primitive_attr_t attr = make_attr(p->po, p->npo, 0, 0, NULL, NULL);
  dnnl_primitive_desc_t pd = make_pd(&desc, attr, hint, p->use_iterator, &status);
  dnnl_primitive_attr_destroy(attr);
  if (hint) dnnl_primitive_desc_destroy(hint);
  if (!pd) {
    const int bf16 = p->sdt == dnnl_bf16 || p->wdt == dnnl_bf16 || p->ddt == dnnl_bf16;
    r->skipped = bf16 && !conf_library_has_bf16() ? conf_no_bf16 : "no implementation in the library";
    r->ok = r->skipped == conf_no_bf16;
    return;
  }
  dnnl_primitive_t prim;
  CHECK_DNNL(dnnl_primitive_create(&prim, pd));
  r->primitive = prim;

  tensor src = tensor_new(&smd), wei = tensor_new(&wmd), dst = tensor_new(&dmd), bias = {0};
  if (bmdp) bias = tensor_new(bmdp);
  /* Inputs random in [-1, 1); the outputs keep the sentinel. */
  int sum_po = 0;
  for (int i = 0; i < p->npo; ++i) sum_po |= p->po[i].kind == PO_SUM;
  tensor old = tensor_new(&dmd);
  if (p->dir != IP_BWD_DATA) tensor_fill(&src, &rng, -1, 1);
  if (p->dir != IP_BWD_WEIGHTS) tensor_fill(&wei, &rng, -1, 1);
  if (bwd || sum_po) tensor_fill(&dst, &rng, -1, 1);
  if (!bwd && bias.data) tensor_fill(&bias, &rng, -1, 1);
  for (size_t b = 0; b < dst.bytes; ++b) old.data[b] = dst.data[b];

  dnnl_exec_arg_t args[4];
  int nargs = 0;
  int src_arg = p->dir == IP_BWD_DATA ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  int wei_arg = p->dir == IP_BWD_WEIGHTS ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  int dst_arg = bwd ? DNNL_ARG_DIFF_DST : DNNL_ARG_DST;
  args[nargs++] = (dnnl_exec_arg_t){src_arg, tensor_memory(&src)};
  args[nargs++] = (dnnl_exec_arg_t){wei_arg, tensor_memory(&wei)};
  args[nargs++] = (dnnl_exec_arg_t){dst_arg, tensor_memory(&dst)};
  if (bias.data) args[nargs++] = (dnnl_exec_arg_t){bwd ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS, tensor_memory(&bias)};
  CHECK_DNNL(dnnl_primitive_execute(prim, conf_stream(), nargs, args));
  CHECK_DNNL(dnnl_stream_wait(conf_stream()));
  r->executions = 1;
  const tensor *out = p->dir == IP_BWD_DATA ? &src : p->dir == IP_BWD_WEIGHTS ? &wei : &dst;
  if (md_nelems(&out->md) == 0) r->empty_executions = 1;

  dnnl_dim_t I = p->IC * s.spatial;
  if (p->dir == IP_BWD_DATA) {
    for (dnnl_dim_t n = 0; n < p->MB; ++n)
      for (dnnl_dim_t i = 0; i < I; ++i) {
        double acc = 0, abs_acc = 0;
        for (dnnl_dim_t o = 0; o < p->OC; ++o) {
          double t = at2(&dst, n, o) * at(&wei, &s, o, i);
          acc += t, abs_acc += fabs(t);
        }
        refval v = {acc, (double)p->OC * CONF_U * abs_acc};
        result_account(r, at(&src, &s, n, i), ref_store(v, p->sdt));
      }
    if (!tensor_gaps_intact(&src)) r->gaps_ok = r->ok = 0;
    r->digest = tensor_digest(&src);
  } else if (p->dir == IP_BWD_WEIGHTS) {
    for (dnnl_dim_t o = 0; o < p->OC; ++o) {
      for (dnnl_dim_t i = 0; i < I; ++i) {
        double acc = 0, abs_acc = 0;
        for (dnnl_dim_t n = 0; n < p->MB; ++n) {
          double t = at2(&dst, n, o) * at(&src, &s, n, i);
          acc += t, abs_acc += fabs(t);
        }
        refval v = {acc, (double)p->MB * CONF_U * abs_acc};
        result_account(r, at(&wei, &s, o, i), ref_store(v, p->wdt));
      }
      if (bias.data) {
        double acc = 0, abs_acc = 0;
        for (dnnl_dim_t n = 0; n < p->MB; ++n) acc += at2(&dst, n, o), abs_acc += fabs(at2(&dst, n, o));
        refval v = {acc, (double)p->MB * CONF_U * abs_acc};
        dnnl_dims_t bi = {o};
        result_account(r, tensor_get(&bias, bi), ref_store(v, p->bdt));
      }
    }
    if (!tensor_gaps_intact(&wei) || (bias.data && !tensor_gaps_intact(&bias))) r->gaps_ok = r->ok = 0;
    r->digest = tensor_digest(&wei) * 0x100000001b3ull ^ (bias.data ? tensor_digest(&bias) : 0);
  } else {
    for (dnnl_dim_t n = 0; n < p->MB; ++n)
      for (dnnl_dim_t o = 0; o < p->OC; ++o) {
        double acc = 0, abs_acc = 0;
        for (dnnl_dim_t i = 0; i < I; ++i) {
          double t = at(&src, &s, n, i) * at(&wei, &s, o, i);
          acc += t, abs_acc += fabs(t);
        }
        refval v = {acc, (double)I * CONF_U * abs_acc};
        if (bias.data) {
          dnnl_dims_t bi = {o};
          v = ref_add_bias(v, tensor_get(&bias, bi));
        }
        for (int k = 0; k < p->npo; ++k) {
          const post_op *po = &p->po[k];
          if (po->kind == PO_SUM) v = ref_add(v, po->scale * at2(&old, n, o));
          if (po->kind == PO_ELTWISE) v = ref_eltwise(v, po->alg, po->alpha, po->beta, po->scale);
        }
        result_account(r, at2(&dst, n, o), ref_store(v, p->ddt));
      }
    if (!tensor_gaps_intact(&dst)) r->gaps_ok = r->ok = 0;
    r->digest = tensor_digest(&dst);
  }

  for (int i = 0; i < nargs; ++i) dnnl_memory_destroy(args[i].memory);
  tensor_free(&src), tensor_free(&wei), tensor_free(&dst), tensor_free(&old);
  if (bias.data) tensor_free(&bias);
  CHECK_DNNL(dnnl_primitive_destroy(prim));
  CHECK_DNNL(dnnl_primitive_desc_destroy(pd));
}
