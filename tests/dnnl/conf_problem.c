/* See conf_problem.h. */
#include "conf_problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

refval ref_scale(refval v, double s) {
  refval r = {v.x * s, 0};
  r.e = fabs(s) * v.e + CONF_U * fabs(r.x);
  return r;
}
refval ref_add(refval v, double added) {
  refval r = {v.x + added, 0};
  r.e = v.e + CONF_U * (fabs(r.x) + fabs(added));
  return r;
}
/* oneDNN adds the bias to the accumulator before the output scale and the
 * sum post-op; HCOps' GEMM applies the scale (alpha) and the sum (beta) to the
 * unbiased accumulator and adds the scaled bias last (its epilogue). That
 * order rounds s*acc and s*acc + beta*dst, where oneDNN's rounds s*(acc +
 * bias): at most 2u|s*acc| more, whatever the cancellation between acc and
 * the bias (conf_problem.h derives it). Seen: 31x1x31 f32, bias, scale
 * -1.5, sum 0.5 on the generic family, 1.218e-07 against ref_add's
 * 1.161e-07. */
refval ref_add_bias(refval v, double bias) {
  v.e += 2 * CONF_U * fabs(v.x);
  return ref_add(v, bias);
}

static double act(dnnl_alg_kind_t alg, double x, double alpha, double *lipschitz) {
  switch (alg) {
    case dnnl_eltwise_relu: *lipschitz = fabs(alpha) > 1 ? fabs(alpha) : 1; return x > 0 ? x : alpha * x;
    case dnnl_eltwise_gelu_tanh:
      *lipschitz = 1.2;
      return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case dnnl_eltwise_gelu_erf: *lipschitz = 1.2; return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case dnnl_eltwise_swish: *lipschitz = 1.2; return x / (1 + exp(-alpha * x));
    case dnnl_eltwise_tanh: *lipschitz = 1; return tanh(x);
    default: fprintf(stderr, "conformance: no reference for eltwise algorithm %#x\n", (unsigned)alg); exit(2);
  }
}

refval ref_eltwise(refval v, dnnl_alg_kind_t alg, double alpha, double beta, double scale) {
  (void)beta;
  double lipschitz;
  refval r;
  r.x = scale * act(alg, v.x, alpha, &lipschitz);
  r.e = fabs(scale) * (lipschitz * v.e + 0x1p-18 * fabs(v.x)) + CONF_U * fabs(r.x);
  return r;
}

refval ref_store(refval v, dnnl_data_type_t dt) {
  switch (dt) {
    case dnnl_f32: v.e += CONF_U * fabs(v.x); break;
    case dnnl_bf16: v.e += bf16_ulp(v.x); break;
    default: v.e += 1; break;
  }
  return v;
}

void result_init(conf_result *r) {
  r->max_err = r->bound = r->worst_ratio = 0;
  r->ok = 1;
  r->gaps_ok = 1;
  r->digest = 0;
  r->skipped = NULL;
  r->executions = 0;
  r->empty_executions = 0;
  r->primitive = NULL;
}

void result_account(conf_result *r, double got, refval want) {
  double err = fabs(got - want.x);
  if (!(err <= want.e)) r->ok = 0; /* NaN fails too */
  double ratio = want.e > 0 ? err / want.e : (err > 0 ? INFINITY : 0);
  if (isnan(err)) ratio = INFINITY;
  if (ratio > r->worst_ratio || (r->worst_ratio == 0 && err >= r->max_err)) {
    r->worst_ratio = ratio;
    r->max_err = err;
    r->bound = want.e;
  }
}

dnnl_primitive_attr_t make_attr(const post_op *po, int npo, int nscales, int scale_mask, const float *scales,
                                const dnnl_memory_desc_t *src1_md) {
  dnnl_primitive_attr_t attr;
  CHECK_DNNL(dnnl_primitive_attr_create(&attr));
  if (nscales) CHECK_DNNL(dnnl_primitive_attr_set_output_scales(attr, nscales, scale_mask, scales));
  if (npo) {
    dnnl_post_ops_t ops;
    CHECK_DNNL(dnnl_post_ops_create(&ops));
    for (int i = 0; i < npo; ++i) {
      switch (po[i].kind) {
        case PO_SUM: CHECK_DNNL(dnnl_post_ops_append_sum(ops, po[i].scale)); break;
        case PO_ELTWISE:
          CHECK_DNNL(dnnl_post_ops_append_eltwise(ops, po[i].scale, po[i].alg, po[i].alpha, po[i].beta));
          break;
        case PO_BINARY_ADD: CHECK_DNNL(dnnl_post_ops_append_binary(ops, dnnl_binary_add, src1_md)); break;
        default: break;
      }
    }
    CHECK_DNNL(dnnl_primitive_attr_set_post_ops(attr, ops));
    CHECK_DNNL(dnnl_post_ops_destroy(ops));
  }
  return attr;
}

dnnl_primitive_desc_t make_pd(const void *op_desc, const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint,
                              int use_iterator, dnnl_status_t *status) {
  dnnl_primitive_desc_t pd = NULL;
  if (!use_iterator) {
    *status = dnnl_primitive_desc_create(&pd, op_desc, attr, conf_engine(), hint);
    return *status == dnnl_success ? pd : NULL;
  }
  dnnl_primitive_desc_iterator_t it;
  *status = dnnl_primitive_desc_iterator_create(&it, op_desc, attr, conf_engine(), hint);
  if (*status != dnnl_success) return NULL;
  pd = dnnl_primitive_desc_iterator_fetch(it);
  CHECK_DNNL(dnnl_primitive_desc_iterator_destroy(it));
  if (!pd) *status = dnnl_runtime_error;
  return pd;
}
