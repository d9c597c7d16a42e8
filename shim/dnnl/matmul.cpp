// Matmul: dst[b] = src[b] * weights[b] (+ bias), 2-D or batched with
// broadcast batch dims, any plain strides, runtime dims.
#include "shim/dnnl/claim.h"
#include "shim/dnnl/decline.h"
#include "shim/dnnl/verbose_info.h"

namespace hcops::dnnl {

namespace {

const dnnl_memory_desc_t *present(const dnnl_memory_desc_t *md) { return md && md->ndims > 0 ? md : nullptr; }

// The geometry of src * weights into dst, and where the bias runs: along
// dst's columns (dims 1 x ... x N) or rows (1 x ... x M x 1), contiguous.
bool matmul_geometry(const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *dst,
                     const dnnl_memory_desc_t *bias, Geometry *g) {
  Matrix a, b, c;
  if (!matrix_of(src, &a) || !matrix_of(wei, &b) || !matrix_of(dst, &c)) return false;
  if (a.nbatch != c.nbatch || b.nbatch != c.nbatch) return decline("batch_ndims");
  bool bias_rows = false, bias_cols = false;
  if (bias) {
    Matrix v;
    if (!matrix_of(bias, &v)) return false;
    if (v.nbatch != c.nbatch) return decline("bias_ndims");
    for (int d = 0; d < v.nbatch; ++d)
      if (v.bdims[d] != 1) return decline("bias_batched");
    if (v.rows == 1 && v.cols == c.cols && (v.cols <= 1 || v.cs == 1)) bias_cols = true;
    else if (v.cols == 1 && v.rows == c.rows && (v.rows <= 1 || v.rs == 1)) bias_rows = true;
    else return decline("bias_shape");  // a full M x N bias, or a scalar one on a wider dst
  }
  return make_geometry(a, b, c, bias_rows, bias_cols, g) || decline("geometry");
}

bool any_runtime(std::initializer_list<const dnnl_memory_desc_t *> mds) {
  for (const dnnl_memory_desc_t *md : mds)
    if (md && has_runtime_dims(md)) return true;
  return false;
}

}  // namespace

std::unique_ptr<PrimitivePlan> matmul_plan(const_dnnl_primitive_desc_t pd) {
  const dnnl_memory_desc_t *src = present(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
  const dnnl_memory_desc_t *wei = present(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
  const dnnl_memory_desc_t *bias = present(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1));
  const dnnl_memory_desc_t *dst = present(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
  if (!src || !wei || !dst) return declined("no_memory");
  if (!plain_md(src) || !plain_md(wei) || !plain_md(dst) || (bias && !plain_md(bias))) return nullptr;
  if (src->data_type != wei->data_type) return declined("datatypes");
  const Claim *claim = find_claim(dnnl_matmul, dnnl_prop_kind_undef, src->data_type, dst->data_type);
  auto plan = std::make_unique<PrimitivePlan>();
  if (!claim || !read_attributes(pd, &plan->attr)) return nullptr;  // (their reasons recorded)
  plan->types = claim->types;
  if (any_runtime({src, wei, dst, bias})) {
    plan->geometry.runtime = matmul_geometry;
  } else if (!matmul_geometry(src, wei, dst, bias, &plan->geometry.gemm)) {
    return nullptr;
  }
  plan->kind = dnnl_matmul;
  plan->memory.arg_a = DNNL_ARG_SRC;
  plan->memory.arg_b = DNNL_ARG_WEIGHTS;
  plan->memory.arg_c = DNNL_ARG_DST;
  plan->memory.md_a = *src;
  plan->memory.md_b = *wei;
  plan->memory.md_c = *dst;
  if (bias) {
    plan->memory.arg_bias = DNNL_ARG_BIAS;
    plan->memory.md_bias = *bias;
    plan->attr.ops.bias_type = bias->data_type == dnnl_bf16 ? Dtype::bf16 : Dtype::f32;
  }

  plan->verbose = matmul_verbose(pd, src, wei, bias, dst);
  return plan;
}

}  // namespace hcops::dnnl
