/* See conformance_list.h. Issue 16's rules, as marked here:
 * must-claim: matmul (2-D, batched with broadcast, any plain strides,
 *   runtime dims) and inner product (forward training/inference,
 *   backward_data, backward_weights, with and without bias) whose src and
 *   weights are both f32 or both bf16 and dst f32 or bf16, plain layouts,
 *   bias f32/bf16, common output scales (constant or given at execution),
 *   post-ops [sum], [eltwise], [sum, eltwise] with eltwise relu, gelu_tanh,
 *   gelu_erf or swish; zero and odd sizes included.
 * must-forward: int8, blocked weights, convolution, per-channel output
 *   scales, a binary post-op, other eltwise algorithms (tanh), an eltwise
 *   before the sum, two eltwise post-ops. */
#include "conformance_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  problem *p;
  int n, cap;
} plist;

static problem *push(plist *l, problem_kind kind) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->p = realloc(l->p, (size_t)l->cap * sizeof *l->p);
    if (!l->p) abort();
  }
  problem *p = &l->p[l->n++];
  memset(p, 0, sizeof *p);
  p->kind = kind;
  return p;
}

static mm_problem *mm(plist *l, const char *name, claim_mark mark, dnnl_dim_t M, dnnl_dim_t K, dnnl_dim_t N,
                      dnnl_data_type_t sdt, dnnl_data_type_t ddt) {
  mm_problem *p = &push(l, P_MATMUL)->u.mm;
  snprintf(p->name, sizeof p->name, "mm_%s", name);
  p->mark = mark;
  p->M = M, p->K = K, p->N = N;
  p->sdt = p->wdt = sdt;
  p->ddt = ddt;
  p->bdt = dnnl_data_type_undef;
  return p;
}
static void batch(mm_problem *p, int nbatch, dnnl_dim_t s0, dnnl_dim_t s1, dnnl_dim_t w0, dnnl_dim_t w1) {
  p->nbatch = nbatch;
  p->src_batch[0] = s0, p->src_batch[1] = s1;
  p->wei_batch[0] = w0, p->wei_batch[1] = w1;
}
static void bias(mm_problem *p, dnnl_data_type_t dt, unsigned mask) { p->bdt = dt, p->bias_mask = mask; }
static void po(mm_problem *p, po_kind kind, dnnl_alg_kind_t alg, float alpha, float scale) {
  p->po[p->npo++] = (post_op){kind, alg, alpha, 0, scale};
}
static ip_problem *ip(plist *l, const char *name, claim_mark mark, ip_dir dir, dnnl_dim_t MB, dnnl_dim_t OC,
                      dnnl_dim_t IC, dnnl_dim_t H, dnnl_data_type_t sdt, dnnl_data_type_t wdt, dnnl_data_type_t ddt,
                      dnnl_data_type_t bdt) {
  ip_problem *p = &push(l, P_IP)->u.ip;
  snprintf(p->name, sizeof p->name, "ip_%s", name);
  p->mark = mark;
  p->dir = dir;
  p->MB = MB, p->OC = OC, p->IC = IC, p->H = p->W = H;
  p->sdt = sdt, p->wdt = wdt, p->ddt = ddt, p->bdt = bdt;
  return p;
}

#define F32 dnnl_f32
#define BF16 dnnl_bf16
#define NONE dnnl_data_type_undef
#define CLAIM MUST_CLAIM
#define FORWARD MUST_FORWARD

static void fixed_matmul(plist *l) {
  mm_problem *p;
  /* Layouts. */
  mm(l, "f32_ab_ab", CLAIM, 64, 96, 80, F32, F32);
  p = mm(l, "f32_ba_ab", CLAIM, 65, 33, 47, F32, F32), p->src_trans = 1;
  p = mm(l, "f32_ab_ba", CLAIM, 47, 65, 33, F32, F32), p->wei_trans = 1;
  p = mm(l, "f32_ba_ba", CLAIM, 33, 47, 65, F32, F32), p->src_trans = p->wei_trans = 1;
  p = mm(l, "f32_ab_ab_ld+5", CLAIM, 40, 36, 28, F32, F32), p->ld_pad = 5;
  p = mm(l, "f32_ba_ba_ld+3", CLAIM, 28, 40, 36, F32, F32), p->ld_pad = 3, p->src_trans = p->wei_trans = 1;
  p = mm(l, "bf16_ab_ba_to_bf16", CLAIM, 128, 256, 96, BF16, BF16), p->wei_trans = 1;
  p = mm(l, "bf16_ab_ab_to_f32", CLAIM, 96, 128, 64, BF16, F32);
  p = mm(l, "bf16_ba_ab_ld+7_to_bf16", CLAIM, 50, 70, 30, BF16, BF16), p->src_trans = 1, p->ld_pad = 7;
  /* Batched, broadcast, batch strides not dense. */
  p = mm(l, "f32_b4", CLAIM, 33, 17, 29, F32, F32), batch(p, 1, 4, 0, 4, 0);
  p = mm(l, "bf16_b5_wei_bcast", CLAIM, 31, 40, 24, BF16, BF16), batch(p, 1, 5, 0, 1, 0), p->wei_trans = 1;
  p = mm(l, "f32_b3_src_bcast", CLAIM, 20, 30, 40, F32, F32), batch(p, 1, 1, 0, 3, 0);
  p = mm(l, "f32_b2x3_cross_bcast", CLAIM, 9, 14, 11, F32, F32), batch(p, 2, 2, 1, 1, 3);
  p = mm(l, "bf16_b2x3_to_f32_ba", CLAIM, 17, 19, 13, BF16, F32), batch(p, 2, 2, 3, 2, 3), p->src_trans = 1;
  p = mm(l, "bf16_b3_ld+3_batch+7", CLAIM, 21, 35, 19, BF16, BF16), batch(p, 1, 3, 0, 3, 0);
  p->ld_pad = 3, p->batch_pad = 7;
  p = mm(l, "f32_b2x2_ba_batch+11", CLAIM, 12, 10, 14, F32, F32), batch(p, 2, 2, 2, 1, 2);
  p->wei_trans = 1, p->batch_pad = 11;
  /* Runtime dims: the second execution at other sizes. */
  p = mm(l, "f32_rt_M", CLAIM, 40, 24, 32, F32, F32), p->runtime = RT_M, p->M2 = 17, p->K2 = 24, p->N2 = 32;
  p = mm(l, "f32_rt_MNK", CLAIM, 30, 20, 10, F32, F32), p->runtime = RT_M | RT_N | RT_K;
  p->M2 = 13, p->K2 = 37, p->N2 = 5;
  p = mm(l, "bf16_rt_MNK_ab_ba", CLAIM, 64, 48, 32, BF16, BF16), p->runtime = RT_M | RT_N | RT_K, p->wei_trans = 1;
  p->M2 = 7, p->K2 = 100, p->N2 = 33;
  p = mm(l, "bf16_b3_rt_batch_M_to_f32", CLAIM, 16, 32, 24, BF16, F32), batch(p, 1, 3, 0, 3, 0);
  p->runtime = RT_BATCH | RT_M, p->M2 = 5, p->K2 = 32, p->N2 = 24;
  p = mm(l, "f32_rt_M_ld+4", CLAIM, 24, 16, 20, F32, F32), p->runtime = RT_M, p->ld_pad = 4;
  p->M2 = 9, p->K2 = 16, p->N2 = 20;
  p = mm(l, "f32_rt_M_bias_1N", CLAIM, 24, 16, 20, F32, F32), p->runtime = RT_M, bias(p, F32, 2);
  p->M2 = 3, p->K2 = 16, p->N2 = 20;
  /* Bias: every shape matmul allows. HCOps claims a bias that is one vector
   * along M or N, the same for every batch (the GEMM epilogue's); a scalar,
   * a full M x N bias and one that varies along the batch are handed to
   * libdnnl (doc/dnnl.md) and must still be right. */
  p = mm(l, "f32_bias_1N", CLAIM, 37, 29, 41, F32, F32), bias(p, F32, 2);
  p = mm(l, "bf16_bias_bf16_1N_to_bf16", CLAIM, 37, 29, 41, BF16, BF16), bias(p, BF16, 2), p->wei_trans = 1;
  p = mm(l, "bf16_bias_f32_1N_to_f32", CLAIM, 24, 64, 40, BF16, F32), bias(p, F32, 2);
  p = mm(l, "f32_bias_M1", CLAIM, 19, 23, 29, F32, F32), bias(p, F32, 1);
  p = mm(l, "f32_bias_11", FORWARD, 19, 23, 29, F32, F32), bias(p, F32, 0);
  p = mm(l, "f32_bias_MN", FORWARD, 19, 23, 29, F32, F32), bias(p, F32, 3);
  p = mm(l, "bf16_b3_bias_11N", CLAIM, 11, 13, 17, BF16, BF16), batch(p, 1, 3, 0, 3, 0), bias(p, BF16, 4);
  p = mm(l, "f32_b3_bias_B1N", FORWARD, 11, 13, 17, F32, F32), batch(p, 1, 3, 0, 1, 0), bias(p, F32, 5);
  p = mm(l, "f32_b2x2_bias_BMN", FORWARD, 5, 7, 6, F32, F32), batch(p, 2, 2, 2, 2, 2), bias(p, F32, 15);
  /* Output scales, sum, eltwise. */
  p = mm(l, "f32_oscale", CLAIM, 30, 40, 50, F32, F32), p->oscale_kind = OSCALE_COMMON, p->oscale = 0.5f;
  p = mm(l, "bf16_oscale_runtime", CLAIM, 30, 40, 50, BF16, BF16), p->oscale_kind = OSCALE_RUNTIME;
  p->oscale = -1.5f;
  p = mm(l, "f32_oscale_bias", CLAIM, 20, 24, 28, F32, F32), p->oscale_kind = OSCALE_COMMON, p->oscale = 2.0f;
  bias(p, F32, 2);
  p = mm(l, "f32_sum", CLAIM, 33, 44, 55, F32, F32), po(p, PO_SUM, 0, 0, 1.0f);
  p = mm(l, "bf16_sum_0.5_to_bf16", CLAIM, 33, 44, 55, BF16, BF16), po(p, PO_SUM, 0, 0, 0.5f), p->wei_trans = 1;
  p = mm(l, "bf16_b2_oscale_sum_to_f32", CLAIM, 16, 40, 24, BF16, F32), batch(p, 1, 2, 0, 2, 0);
  p->oscale_kind = OSCALE_COMMON, p->oscale = 0.25f, po(p, PO_SUM, 0, 0, -1.0f);
  p = mm(l, "f32_relu", CLAIM, 31, 37, 41, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_relu, 0, 1);
  p = mm(l, "f32_relu_alpha_scale", CLAIM, 31, 37, 41, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_relu, 0.1f, 2);
  p = mm(l, "f32_gelu_tanh", CLAIM, 31, 37, 41, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_gelu_tanh, 0, 1);
  p = mm(l, "bf16_gelu_tanh_to_bf16", CLAIM, 64, 64, 64, BF16, BF16);
  po(p, PO_ELTWISE, dnnl_eltwise_gelu_tanh, 0, 1), bias(p, BF16, 2), p->wei_trans = 1;
  p = mm(l, "f32_gelu_erf", CLAIM, 31, 37, 41, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_gelu_erf, 0, 1);
  p = mm(l, "bf16_gelu_erf_scale_to_f32", CLAIM, 31, 37, 41, BF16, F32);
  po(p, PO_ELTWISE, dnnl_eltwise_gelu_erf, 0, 0.5f);
  p = mm(l, "f32_swish", CLAIM, 31, 37, 41, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_swish, 1, 1);
  p = mm(l, "bf16_swish_alpha_scale_to_bf16", CLAIM, 31, 37, 41, BF16, BF16);
  po(p, PO_ELTWISE, dnnl_eltwise_swish, 1.702f, 1.5f);
  p = mm(l, "f32_sum_gelu_tanh_bias", CLAIM, 40, 50, 60, F32, F32), bias(p, F32, 2);
  po(p, PO_SUM, 0, 0, 1.0f), po(p, PO_ELTWISE, dnnl_eltwise_gelu_tanh, 0, 1);
  p = mm(l, "bf16_b2_oscale_sum_swish_to_bf16", CLAIM, 20, 30, 40, BF16, BF16), batch(p, 1, 2, 0, 1, 0);
  p->oscale_kind = OSCALE_COMMON, p->oscale = 0.5f;
  po(p, PO_SUM, 0, 0, 2.0f), po(p, PO_ELTWISE, dnnl_eltwise_swish, 1, 1);
  p = mm(l, "f32_sum_relu_ba", CLAIM, 25, 35, 45, F32, F32), p->src_trans = p->wei_trans = 1;
  po(p, PO_SUM, 0, 0, 0.5f), po(p, PO_ELTWISE, dnnl_eltwise_relu, 0, 1);
  /* Zero sizes. Stock oneDNN 2.6.3 dies of SIGFPE creating a matmul
   * primitive descriptor with a zero M, N or K (seen on AVX-512 Zen 5): zero
   * sizes reach a matmul only as runtime dims, the second execution here.
   * K = 0 is left out: executed at a runtime K = 0, stock oneDNN 2.6.3
   * leaves garbage in dst (2.5 where relu(0) = 0 is due, or a skipped
   * bias and sum), so no result can be checked against it. */
  p = mm(l, "f32_rt_MNK_exec_M0", CLAIM, 16, 16, 16, F32, F32), p->runtime = RT_M | RT_N | RT_K;
  p->M2 = 0, p->K2 = 16, p->N2 = 16;
  p = mm(l, "f32_rt_MNK_exec_N0", CLAIM, 16, 16, 16, F32, F32), p->runtime = RT_M | RT_N | RT_K;
  p->M2 = 16, p->K2 = 16, p->N2 = 0;
  p = mm(l, "f32_b3_rt_batch_exec_batch0", CLAIM, 8, 8, 8, F32, F32), batch(p, 1, 3, 0, 3, 0);
  p->runtime = RT_BATCH, p->M2 = 8, p->K2 = 8, p->N2 = 8, p->batch0_2 = 1;
  /* Odd sizes. */
  mm(l, "f32_1x1x1", CLAIM, 1, 1, 1, F32, F32);
  mm(l, "bf16_1x1x1_to_bf16", CLAIM, 1, 1, 1, BF16, BF16);
  mm(l, "f32_3x3x3", CLAIM, 3, 3, 3, F32, F32);
  p = mm(l, "f32_1x131x1_ba", CLAIM, 1, 131, 1, F32, F32), p->wei_trans = 1;
  mm(l, "f32_17x1x131", CLAIM, 17, 1, 131, F32, F32);
  p = mm(l, "bf16_131x17x3_to_f32", CLAIM, 131, 17, 3, BF16, F32);
  p = mm(l, "bf16_3x131x17_to_bf16_ba", CLAIM, 3, 131, 17, BF16, BF16), p->src_trans = 1;
  p = mm(l, "f32_b1x1_1x1x1", CLAIM, 1, 1, 1, F32, F32), batch(p, 2, 1, 1, 1, 1);
  mm(l, "f32_131x131x131", CLAIM, 131, 131, 131, F32, F32);
  /* The iterator path (PyTorch's dnnl.hpp). */
  p = mm(l, "bf16_iterator_bias_sum_to_bf16", CLAIM, 48, 64, 80, BF16, BF16), p->use_iterator = 1;
  p->wei_trans = 1, bias(p, BF16, 2), po(p, PO_SUM, 0, 0, 1.0f);
  p = mm(l, "f32_iterator_b2_gelu_erf", CLAIM, 20, 30, 10, F32, F32), batch(p, 1, 2, 0, 2, 0);
  p->use_iterator = 1, po(p, PO_ELTWISE, dnnl_eltwise_gelu_erf, 0, 1);

  /* Must be forwarded, and still right. */
  p = mm(l, "u8s8_f32_src_zp", FORWARD, 24, 40, 32, dnnl_u8, F32), p->wdt = dnnl_s8, p->src_zp = 3;
  p = mm(l, "s8s8_s32", FORWARD, 24, 40, 32, dnnl_s8, dnnl_s32);
  p = mm(l, "u8s8_s8_oscale", FORWARD, 16, 24, 20, dnnl_u8, dnnl_s8), p->wdt = dnnl_s8;
  p->oscale_kind = OSCALE_COMMON, p->oscale = 0.125f;
  p = mm(l, "bf16_weights_any_blocked", FORWARD, 64, 128, 96, BF16, BF16), p->wei_any = 1;
  p = mm(l, "f32_oscale_per_n", FORWARD, 20, 30, 40, F32, F32), p->oscale_kind = OSCALE_PER_N;
  p = mm(l, "bf16_oscale_per_n_to_bf16", FORWARD, 20, 30, 40, BF16, BF16), p->oscale_kind = OSCALE_PER_N;
  p = mm(l, "f32_binary_add", FORWARD, 20, 30, 40, F32, F32), po(p, PO_BINARY_ADD, 0, 0, 1);
  p = mm(l, "bf16_binary_add_to_bf16", FORWARD, 20, 30, 40, BF16, BF16), po(p, PO_BINARY_ADD, 0, 0, 1);
  p = mm(l, "f32_tanh", FORWARD, 20, 30, 40, F32, F32), po(p, PO_ELTWISE, dnnl_eltwise_tanh, 0, 1);
  p = mm(l, "bf16_tanh_to_bf16", FORWARD, 20, 30, 40, BF16, BF16), po(p, PO_ELTWISE, dnnl_eltwise_tanh, 0, 1);
  p = mm(l, "f32_relu_then_sum", FORWARD, 20, 30, 40, F32, F32);
  po(p, PO_ELTWISE, dnnl_eltwise_relu, 0, 1), po(p, PO_SUM, 0, 0, 1.0f);
  p = mm(l, "f32_relu_then_gelu_erf", FORWARD, 20, 30, 40, F32, F32);
  po(p, PO_ELTWISE, dnnl_eltwise_relu, 0, 1), po(p, PO_ELTWISE, dnnl_eltwise_gelu_erf, 0, 1);
}

static void fixed_ip(plist *l) {
  ip_problem *p;
  ip(l, "fwd_training_f32_bias", CLAIM, IP_FWD_TRAINING, 32, 48, 64, 0, F32, F32, F32, F32);
  ip(l, "fwd_inference_f32", CLAIM, IP_FWD_INFERENCE, 33, 47, 65, 0, F32, F32, F32, NONE);
  ip(l, "fwd_training_bf16_bias_bf16", CLAIM, IP_FWD_TRAINING, 40, 64, 96, 0, BF16, BF16, BF16, BF16);
  ip(l, "fwd_inference_bf16_to_f32_bias_f32", CLAIM, IP_FWD_INFERENCE, 40, 64, 96, 0, BF16, BF16, F32, F32);
  ip(l, "fwd_training_f32_nchw_bias", CLAIM, IP_FWD_TRAINING, 8, 20, 6, 5, F32, F32, F32, F32);
  ip(l, "fwd_inference_bf16_nchw", CLAIM, IP_FWD_INFERENCE, 8, 20, 6, 3, BF16, BF16, BF16, NONE);
  p = ip(l, "fwd_inference_f32_bias_relu", CLAIM, IP_FWD_INFERENCE, 17, 31, 29, 0, F32, F32, F32, F32);
  p->po[p->npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_relu, 0, 0, 1};
  p = ip(l, "fwd_training_bf16_sum_gelu_erf_iterator", CLAIM, IP_FWD_TRAINING, 17, 31, 29, 0, BF16, BF16, BF16, BF16);
  p->po[p->npo++] = (post_op){PO_SUM, 0, 0, 0, 1};
  p->po[p->npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_gelu_erf, 0, 0, 1};
  p->use_iterator = 1;
  /* (oneDNN 2.6 has no f32 or bf16 inner product with output scales.) */
  p = ip(l, "fwd_inference_f32_bias_sum0.5", CLAIM, IP_FWD_INFERENCE, 20, 36, 28, 0, F32, F32, F32, F32);
  p->po[p->npo++] = (post_op){PO_SUM, 0, 0, 0, 0.5f};
  p = ip(l, "fwd_training_bf16_swish_scale", CLAIM, IP_FWD_TRAINING, 20, 36, 28, 0, BF16, BF16, BF16, BF16);
  p->po[p->npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_swish, 1.5f, 0, 2.0f};
  ip(l, "bwd_data_f32", CLAIM, IP_BWD_DATA, 32, 48, 64, 0, F32, F32, F32, NONE);
  ip(l, "bwd_data_f32_nchw", CLAIM, IP_BWD_DATA, 8, 20, 6, 5, F32, F32, F32, NONE);
  ip(l, "bwd_data_bf16", CLAIM, IP_BWD_DATA, 40, 64, 96, 0, BF16, BF16, BF16, NONE);
  ip(l, "bwd_data_bf16_to_f32", CLAIM, IP_BWD_DATA, 40, 64, 96, 0, F32, BF16, BF16, NONE);
  p = ip(l, "bwd_data_bf16_nchw_iterator", CLAIM, IP_BWD_DATA, 8, 20, 6, 3, BF16, BF16, BF16, NONE);
  p->use_iterator = 1;
  ip(l, "bwd_weights_f32_bias", CLAIM, IP_BWD_WEIGHTS, 32, 48, 64, 0, F32, F32, F32, F32);
  ip(l, "bwd_weights_f32", CLAIM, IP_BWD_WEIGHTS, 33, 47, 65, 0, F32, F32, F32, NONE);
  ip(l, "bwd_weights_f32_nchw_bias", CLAIM, IP_BWD_WEIGHTS, 8, 20, 6, 5, F32, F32, F32, F32);
  ip(l, "bwd_weights_bf16_to_f32_bias_f32", CLAIM, IP_BWD_WEIGHTS, 40, 64, 96, 0, BF16, F32, BF16, F32);
  ip(l, "bwd_weights_bf16_bias_bf16", CLAIM, IP_BWD_WEIGHTS, 40, 64, 96, 0, BF16, BF16, BF16, BF16);
  p = ip(l, "bwd_weights_bf16_nchw_iterator", CLAIM, IP_BWD_WEIGHTS, 8, 20, 6, 3, BF16, BF16, BF16, NONE);
  p->use_iterator = 1;
  ip(l, "fwd_training_f32_1x1x1", CLAIM, IP_FWD_TRAINING, 1, 1, 1, 0, F32, F32, F32, F32);
  ip(l, "fwd_inference_f32_3x131x17", CLAIM, IP_FWD_INFERENCE, 3, 131, 17, 0, F32, F32, F32, NONE);
  ip(l, "bwd_data_f32_17x3x131", CLAIM, IP_BWD_DATA, 17, 3, 131, 0, F32, F32, F32, NONE);
  ip(l, "bwd_weights_f32_131x17x3_bias", CLAIM, IP_BWD_WEIGHTS, 131, 17, 3, 0, F32, F32, F32, F32);
  ip(l, "fwd_inference_f32_mb0", CLAIM, IP_FWD_INFERENCE, 0, 16, 16, 0, F32, F32, F32, F32);
  /* Must be forwarded. */
  ip(l, "fwd_inference_u8s8_s32", FORWARD, IP_FWD_INFERENCE, 16, 24, 32, 0, dnnl_u8, dnnl_s8, dnnl_s32, NONE);
  p = ip(l, "fwd_inference_f32_tanh", FORWARD, IP_FWD_INFERENCE, 16, 24, 32, 0, F32, F32, F32, F32);
  p->po[p->npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_tanh, 0, 0, 1};

  conv_problem *c = &push(l, P_CONV)->u.conv;
  *c = (conv_problem){"conv_f32_3x3_bias", 2, 8, 16, 12, 10, 3, 3, 1};
  c = &push(l, P_CONV)->u.conv;
  *c = (conv_problem){"conv_f32_1x1", 2, 16, 8, 7, 7, 1, 1, 0};
}

static const dnnl_dim_t sizes[] = {1, 2, 3, 5, 8, 16, 17, 31, 33, 64, 100, 131};
static dnnl_dim_t pick_size(uint64_t *rng, int max_index) { return sizes[rng_int(rng, 0, max_index)]; }

static const dnnl_alg_kind_t claimed_algs[] = {dnnl_eltwise_relu, dnnl_eltwise_gelu_tanh, dnnl_eltwise_gelu_erf,
                                               dnnl_eltwise_swish};
static const char *const alg_names[] = {"relu", "gelu_tanh", "gelu_erf", "swish"};

/* Sum, eltwise, or sum then eltwise, or none; appended to name. */
static int random_post_ops(uint64_t *rng, post_op *po, char *name, size_t cap) {
  int n = 0, choice = (int)rng_int(rng, 0, 4);
  if (choice == 1 || choice == 3) {
    static const float sum_scales[] = {1.0f, 0.5f, -1.0f};
    po[n++] = (post_op){PO_SUM, 0, 0, 0, sum_scales[rng_int(rng, 0, 2)]};
    snprintf(name + strlen(name), cap - strlen(name), "_sum%g", po[n - 1].scale);
  }
  if (choice == 2 || choice == 3) {
    int a = (int)rng_int(rng, 0, 3);
    float alpha = a == 0 ? (rng_int(rng, 0, 1) ? 0.1f : 0.0f) : a == 3 ? (float)rng_int(rng, 1, 4) * 0.5f : 0.0f;
    static const float scales[] = {1.0f, 0.5f, 2.0f};
    po[n++] = (post_op){PO_ELTWISE, claimed_algs[a], alpha, 0, scales[rng_int(rng, 0, 2)]};
    snprintf(name + strlen(name), cap - strlen(name), "_%s", alg_names[a]);
  }
  return n;
}

static void random_matmul(plist *l, uint64_t *rng, int index) {
  mm_problem *p = &push(l, P_MATMUL)->u.mm;
  p->mark = CLAIM;
  p->nbatch = (int)rng_int(rng, 0, 2);
  int max_index = p->nbatch ? 9 : 11; /* batched: up to 64 */
  p->M = pick_size(rng, max_index), p->K = pick_size(rng, max_index), p->N = pick_size(rng, max_index);
  for (int d = 0; d < p->nbatch; ++d) {
    dnnl_dim_t b = rng_int(rng, 1, 3);
    p->src_batch[d] = rng_int(rng, 0, 3) ? b : 1;
    p->wei_batch[d] = rng_int(rng, 0, 3) ? b : 1;
  }
  static const dnnl_data_type_t types[3][2] = {{F32, F32}, {BF16, BF16}, {BF16, F32}};
  int t = (int)rng_int(rng, 0, 2);
  p->sdt = p->wdt = types[t][0], p->ddt = types[t][1];
  p->src_trans = (int)rng_int(rng, 0, 1), p->wei_trans = (int)rng_int(rng, 0, 1);
  p->ld_pad = rng_int(rng, 0, 1) ? rng_int(rng, 1, 9) : 0;
  p->batch_pad = p->nbatch && rng_int(rng, 0, 1) ? rng_int(rng, 1, 13) : 0;
  int nd = p->nbatch + 2;
  snprintf(p->name, sizeof p->name, "mm_rand%02d_%s_b%d_%ldx%ldx%ld%s%s_ld+%ld_bt+%ld", index,
           t == 0   ? "f32"
           : t == 1 ? "bf16"
                    : "bf16f32",
           p->nbatch, (long)p->M, (long)p->K, (long)p->N, p->src_trans ? "_ta" : "", p->wei_trans ? "_tb" : "",
           (long)p->ld_pad, (long)p->batch_pad);
  p->bdt = NONE;
  if (rng_int(rng, 0, 4) >= 2) {
    /* A row (1 x N, PyTorch's Linear) or a column (M x 1): the shapes
     * every reading of the issue claims; the others (scalar, M x N, along a
     * batch dim) are named problems of the fixed list. */
    p->bias_mask = (rng_int(rng, 0, 3) ? 2u : 1u) << p->nbatch;
    p->bdt = p->sdt == BF16 && rng_int(rng, 0, 1) ? BF16 : F32;
    snprintf(p->name + strlen(p->name), sizeof p->name - strlen(p->name), "_bias%s%x", dt_name(p->bdt), p->bias_mask);
  }
  int s = (int)rng_int(rng, 0, 3);
  if (s >= 2) {
    static const float scales[] = {0.5f, 2.0f, -1.5f, 0.125f};
    p->oscale_kind = s == 2 ? OSCALE_COMMON : OSCALE_RUNTIME;
    p->oscale = scales[rng_int(rng, 0, 3)];
    strcat(p->name, s == 2 ? "_oscale" : "_oscale_rt");
  }
  p->npo = random_post_ops(rng, p->po, p->name, sizeof p->name);
  if (rng_int(rng, 0, 3) == 0) {
    p->runtime = (unsigned)rng_int(rng, 1, 15);
    if (!p->nbatch) p->runtime &= ~(unsigned)RT_BATCH;
    /* oneDNN 2.6 refuses a bias with runtime batch dims. */
    if (p->bdt != NONE) p->runtime &= ~(unsigned)RT_BATCH;
    if (!p->runtime) p->runtime = RT_M;
    /* oneDNN 2.6 refuses runtime batch dims with a broadcast one. */
    if (p->runtime & RT_BATCH)
      for (int d = 0; d < p->nbatch; ++d) {
        dnnl_dim_t b = p->src_batch[d] > p->wei_batch[d] ? p->src_batch[d] : p->wei_batch[d];
        p->src_batch[d] = p->wei_batch[d] = b;
      }
    p->M2 = p->runtime & RT_M ? pick_size(rng, 9) : p->M;
    p->K2 = p->runtime & RT_K ? pick_size(rng, 9) : p->K;
    p->N2 = p->runtime & RT_N ? pick_size(rng, 9) : p->N;
    snprintf(p->name + strlen(p->name), sizeof p->name - strlen(p->name), "_rt%x", p->runtime);
  }
  (void)nd;
  p->use_iterator = (int)rng_int(rng, 0, 1);
  if (p->use_iterator) strcat(p->name, "_it");
}

static void random_ip(plist *l, uint64_t *rng, int index) {
  ip_problem *p = &push(l, P_IP)->u.ip;
  p->mark = CLAIM;
  p->dir = (ip_dir)rng_int(rng, 0, 3);
  p->MB = pick_size(rng, 10), p->OC = pick_size(rng, 10);
  p->H = p->W = rng_int(rng, 0, 2) ? 0 : rng_int(rng, 1, 4);
  p->IC = pick_size(rng, p->H ? 6 : 10);
  int bf16 = (int)rng_int(rng, 0, 1);
  p->sdt = p->wdt = p->ddt = bf16 ? BF16 : F32;
  p->bdt = NONE;
  int bwd = p->dir == IP_BWD_DATA || p->dir == IP_BWD_WEIGHTS;
  /* The output of each direction may be f32 with bf16 inputs. */
  if (bf16 && rng_int(rng, 0, 1)) {
    if (p->dir == IP_BWD_DATA) p->sdt = F32;
    else if (p->dir == IP_BWD_WEIGHTS) p->wdt = F32;
    else p->ddt = F32;
  }
  if (p->dir != IP_BWD_DATA && rng_int(rng, 0, 1)) p->bdt = bf16 && rng_int(rng, 0, 1) ? BF16 : F32;
  static const char *const dirs[] = {"fwd_training", "fwd_inference", "bwd_data", "bwd_weights"};
  snprintf(p->name, sizeof p->name, "ip_rand%02d_%s_%s:%s:%s_%ldx%ldx%ld", index, dirs[p->dir], dt_name(p->sdt),
           dt_name(p->wdt), dt_name(p->ddt), (long)p->MB, (long)p->OC, (long)p->IC);
  if (p->H) snprintf(p->name + strlen(p->name), sizeof p->name - strlen(p->name), "x%ldx%ld", (long)p->H, (long)p->W);
  if (p->bdt != NONE) snprintf(p->name + strlen(p->name), sizeof p->name - strlen(p->name), "_bias%s", dt_name(p->bdt));
  if (!bwd) p->npo = random_post_ops(rng, p->po, p->name, sizeof p->name);
  p->use_iterator = (int)rng_int(rng, 0, 1);
  if (p->use_iterator) strcat(p->name, "_it");
}

problem *conformance_list(uint64_t seed, int nrandom, int *count) {
  plist l = {0};
  fixed_matmul(&l);
  fixed_ip(&l);
  uint64_t rng = seed;
  for (int i = 0; i < nrandom; ++i) {
    if (rng_int(&rng, 0, 3)) random_matmul(&l, &rng, i);
    else random_ip(&l, &rng, i);
  }
  *count = l.n;
  return l.p;
}

const char *problem_name(const problem *p) {
  return p->kind == P_MATMUL ? p->u.mm.name : p->kind == P_IP ? p->u.ip.name : p->u.conv.name;
}
claim_mark problem_mark(const problem *p) {
  return p->kind == P_MATMUL ? p->u.mm.mark : p->kind == P_IP ? p->u.ip.mark : MUST_FORWARD;
}
