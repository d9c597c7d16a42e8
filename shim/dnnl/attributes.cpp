// oneDNN 2.6's attributes of a primitive HCOps may claim: output scales
// with mask 0 (a runtime one too), no zero points, strict fpmath, and at
// most a sum (no zero point nor data type) followed by one eltwise HCOps's
// operators compute. Anything else: not claimed.
#include <cstring>

#include "shim/dnnl/decline.h"
#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

bool read_attributes(const_dnnl_primitive_desc_t pd, PlanAttributes *out) {
  const_dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success || !attr) return decline("attr_query");
  // f32 in a reduced-precision math mode is oneDNN's to round: forwarded.
  dnnl_fpmath_mode_t fpmath;
  if (dnnl_primitive_attr_get_fpmath_mode(attr, &fpmath) != dnnl_success || fpmath != dnnl_fpmath_mode_strict)
    return decline("fpmath_mode");

  dnnl_dim_t count = 0;
  int mask = 0;
  const float *scales = nullptr;
  if (dnnl_primitive_attr_get_output_scales(attr, &count, &mask, &scales) != dnnl_success)
    return decline("attr_query");
  if (mask != 0 || count != 1 || !scales) return decline("output_scales_mask");  // per-channel scales
  {
    // DNNL_RUNTIME_F32_VAL is a NaN of its own bit pattern.
    const float rt = DNNL_RUNTIME_F32_VAL;
    out->runtime_scale = std::memcmp(&rt, &scales[0], sizeof rt) == 0;
  }
  out->alpha = out->runtime_scale ? 1.0f : scales[0];

  for (int arg : {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}) {
    const int32_t *zp = nullptr;
    if (dnnl_primitive_attr_get_zero_points(attr, arg, &count, &mask, &zp) != dnnl_success)
      return decline("attr_query");
    if (mask != 0 || count != 1 || !zp || zp[0] != 0) return decline("zero_points");
  }

  const_dnnl_post_ops_t po = nullptr;
  if (dnnl_primitive_attr_get_post_ops(attr, &po) != dnnl_success || !po) return decline("attr_query");
  const int len = dnnl_post_ops_len(po);
  bool sum = false;
  for (int i = 0; i < len; ++i) {
    switch (dnnl_post_ops_get_kind(po, i)) {
      case dnnl_sum: {
        // A sum after the eltwise is not C = alpha AB + beta C.
        float scale;
        int32_t zero_point;
        dnnl_data_type_t dt;
        if (sum || out->ops.act != ops::Activation::none) return decline("post_op_order");
        if (dnnl_post_ops_get_params_sum_v3(po, i, &scale, &zero_point, &dt) != dnnl_success)
          return decline("attr_query");
        if (zero_point != 0 || dt != dnnl_data_type_undef) return decline("sum_zero_point_or_type");
        out->beta = scale;
        sum = true;
        break;
      }
      case dnnl_eltwise: {
        float scale, alpha, beta;
        dnnl_alg_kind_t alg;
        if (out->ops.act != ops::Activation::none) return decline("post_op_order");
        if (dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &alpha, &beta) != dnnl_success)
          return decline("attr_query");
        switch (alg) {
          case dnnl_eltwise_relu: out->ops.act = ops::Activation::relu; break;
          case dnnl_eltwise_gelu_tanh: out->ops.act = ops::Activation::gelu_tanh; break;
          case dnnl_eltwise_gelu_erf: out->ops.act = ops::Activation::gelu_erf; break;
          case dnnl_eltwise_swish: out->ops.act = ops::Activation::swish; break;
          default: return decline("eltwise_alg");
        }
        out->ops.act_alpha = alpha;
        out->ops.act_beta = beta;
        out->ops.act_scale = scale;
        break;
      }
      case dnnl_binary: return decline("post_op_binary");
      default: return decline("post_op_kind");  // depthwise convolution, prelu
    }
  }
  return true;
}

}  // namespace hcops::dnnl
