// Inner product, as GEMMs on the flattened operands (src N x IC*spatial,
// weights OC x IC*spatial):
//   forward          dst = src * weights^T + bias
//   backward_data    diff_src = diff_dst * weights
//   backward_weights diff_weights = diff_dst^T * src, diff_bias = sum_n diff_dst
#include "shim/dnnl/claim.h"
#include "shim/dnnl/decline.h"
#include "shim/dnnl/verbose_info.h"

namespace hcops::dnnl {

namespace {

const dnnl_memory_desc_t *present(const dnnl_memory_desc_t *md) { return md && md->ndims > 0 ? md : nullptr; }

// md (N x C x spatial..., or N x C) as the matrix N x C*spatial. With
// spatial dims, C and the spatial dims must be dense (they flatten to one
// unit-stride dimension) and laid out as in `like` (the weights or their
// diff), so that both flatten alike.
bool flat(const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *like, Matrix *x) {
  if (!plain_md(md)) return false;
  if (has_runtime_dims(md)) return decline("runtime_dims");
  if (md->ndims < 2) return decline("ndims");
  const auto &st = md->format_desc.blocking.strides;
  *x = Matrix{};
  x->rows = md->dims[0];
  x->rs = st[0];
  x->offset = md->offset0;
  if (md->ndims == 2) {
    x->cols = md->dims[1];
    x->cs = st[1];
    return true;
  }
  if (like->ndims != md->ndims) return decline("ndims");
  // Dense: the non-unit dims, by increasing stride, each at the product of
  // the ones before.
  long expected = 1, cols = 1;
  bool used[DNNL_MAX_NDIMS] = {};
  for (int d = 1; d < md->ndims; ++d) {
    if (md->dims[d] > 1 && st[d] != like->format_desc.blocking.strides[d]) return decline("layouts_differ");
    cols *= md->dims[d];
  }
  for (int n = 1; n < md->ndims; ++n) {
    int best = -1;
    for (int d = 1; d < md->ndims; ++d)
      if (!used[d] && md->dims[d] > 1 && (best < 0 || st[d] < st[best])) best = d;
    if (best < 0) break;
    used[best] = true;
    if (st[best] != expected) return decline("not_dense");
    expected *= md->dims[best];
  }
  x->cols = cols;
  x->cs = 1;
  return true;
}

Matrix transposed(Matrix x) {
  std::swap(x.rows, x.cols);
  std::swap(x.rs, x.cs);
  return x;
}

bool plain_vector(const dnnl_memory_desc_t *md) {
  if (!plain_md(md)) return false;
  return (md->ndims == 1 && !has_runtime_dims(md)) || decline("bias_shape");
}

}  // namespace

std::unique_ptr<PrimitivePlan> inner_product_plan(const_dnnl_primitive_desc_t pd) {
  const dnnl_inner_product_desc_t *d = nullptr;
  if (dnnl_primitive_desc_query(pd, dnnl_query_inner_product_d, 0, &d) != dnnl_success || !d)
    return declined("desc_query");
  auto q = [pd](dnnl_query_t what, int i) { return present(dnnl_primitive_desc_query_md(pd, what, i)); };
  auto plan = std::make_unique<PrimitivePlan>();
  plan->kind = dnnl_inner_product;
  if (!read_attributes(pd, &plan->attr)) return nullptr;  // (its reason recorded)
  const bool attrs = plan->attr.alpha != 1.0f || plan->attr.runtime_scale || plan->attr.beta != 0.0f || !plan->attr.ops.empty();

  Matrix a, b, c;
  const dnnl_memory_desc_t *src, *wei, *bias = nullptr, *dst, *ma, *mb, *mc;
  switch (d->prop_kind) {
    case dnnl_forward_training:
    case dnnl_forward_inference: {
      src = q(dnnl_query_src_md, 0), wei = q(dnnl_query_weights_md, 0), bias = q(dnnl_query_weights_md, 1);
      dst = q(dnnl_query_dst_md, 0);
      if (!src || !wei || !dst) return declined("no_memory");
      if (!flat(src, wei, &a) || !flat(wei, src, &b) || !matrix_of(dst, &c)) return nullptr;
      if (bias && !plain_vector(bias)) return nullptr;
      if (bias && bias->dims[0] != c.cols) return declined("bias_shape");
      b = transposed(b);
      ma = src, mb = wei, mc = dst;
      plan->memory.arg_a = DNNL_ARG_SRC, plan->memory.arg_b = DNNL_ARG_WEIGHTS, plan->memory.arg_c = DNNL_ARG_DST;
      if (bias) {
        plan->memory.arg_bias = DNNL_ARG_BIAS;
        plan->memory.md_bias = *bias;
        plan->attr.ops.bias_type = bias->data_type == dnnl_bf16 ? Dtype::bf16 : Dtype::f32;
      }
      break;
    }
    case dnnl_backward_data: {
      src = q(dnnl_query_diff_src_md, 0), wei = q(dnnl_query_weights_md, 0), dst = q(dnnl_query_diff_dst_md, 0);
      if (attrs) return declined("attributes_on_backward");
      if (!src || !wei || !dst) return declined("no_memory");
      if (!flat(src, wei, &c) || !flat(wei, src, &b) || !matrix_of(dst, &a)) return nullptr;
      ma = dst, mb = wei, mc = src;
      plan->memory.arg_a = DNNL_ARG_DIFF_DST, plan->memory.arg_b = DNNL_ARG_WEIGHTS, plan->memory.arg_c = DNNL_ARG_DIFF_SRC;
      break;
    }
    case dnnl_backward_weights: {
      src = q(dnnl_query_src_md, 0), wei = q(dnnl_query_diff_weights_md, 0), bias = q(dnnl_query_diff_weights_md, 1);
      dst = q(dnnl_query_diff_dst_md, 0);
      if (attrs) return declined("attributes_on_backward");
      if (!src || !wei || !dst) return declined("no_memory");
      if (!flat(src, wei, &b) || !flat(wei, src, &c) || !matrix_of(dst, &a)) return nullptr;
      if (bias && !plain_vector(bias)) return nullptr;
      if (bias && bias->dims[0] != c.rows) return declined("bias_shape");
      plan->geometry.diff_dst = a;
      a = transposed(a);
      ma = dst, mb = src, mc = wei;
      plan->memory.arg_a = DNNL_ARG_DIFF_DST, plan->memory.arg_b = DNNL_ARG_SRC, plan->memory.arg_c = DNNL_ARG_DIFF_WEIGHTS;
      if (bias) {
        plan->memory.arg_diff_bias = DNNL_ARG_DIFF_BIAS;
        plan->memory.md_diff_bias = *bias;
      }
      break;
    }
    default: return declined("prop_kind");
  }
  if (ma->data_type != mb->data_type) return declined("datatypes");
  const Claim *claim = find_claim(dnnl_inner_product, d->prop_kind, ma->data_type, mc->data_type);
  if (!claim) return nullptr;  // (its reason recorded)
  plan->types = claim->types;
  if (!make_geometry(a, b, c, false, plan->memory.arg_bias != 0, &plan->geometry.gemm)) return declined("geometry");
  plan->memory.md_a = *ma;
  plan->memory.md_b = *mb;
  plan->memory.md_c = *mc;

  plan->verbose = inner_product_verbose(pd, d->prop_kind, src, wei, dst);
  return plan;
}

}  // namespace hcops::dnnl
