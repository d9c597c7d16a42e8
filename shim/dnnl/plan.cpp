#include "shim/dnnl/plan.h"

#include <algorithm>

namespace hcops::dnnl {

bool matrix_of(const dnnl_memory_desc_t *md, Matrix *x) {
  if (!plain_md(md) || md->ndims < 2 || has_runtime_dims(md)) return false;
  const int nd = md->ndims;
  const auto &st = md->format_desc.blocking.strides;
  *x = Matrix{};
  x->rows = md->dims[nd - 2];
  x->cols = md->dims[nd - 1];
  x->rs = st[nd - 2];
  x->cs = st[nd - 1];
  x->offset = md->offset0;
  x->nbatch = nd - 2;
  for (int d = 0; d < nd - 2; ++d) {
    x->bdims[d] = md->dims[d];
    x->bstrides[d] = st[d];
  }
  return true;
}

Types types_of(dnnl_data_type_t ab, dnnl_data_type_t c, bool *ok) {
  *ok = true;
  if (ab == dnnl_f32 && c == dnnl_f32) return Types::f32;
  if (ab == dnnl_bf16 && c == dnnl_f32) return Types::bf16_f32;
  if (ab == dnnl_bf16 && c == dnnl_bf16) return Types::bf16_bf16;
  *ok = false;
  return Types::f32;
}

bool plain_md(const dnnl_memory_desc_t *md) {
  if (!md || md->ndims < 1 || md->format_kind != dnnl_blocked) return false;
  if (md->data_type != dnnl_f32 && md->data_type != dnnl_bf16) return false;
  if (md->format_desc.blocking.inner_nblks != 0 || md->extra.flags != 0) return false;
  for (int d = 0; d < md->ndims; ++d)
    if (md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0) return false;
  return true;
}

bool has_runtime_dims(const dnnl_memory_desc_t *md) {
  if (md->offset0 == DNNL_RUNTIME_DIM_VAL) return true;
  for (int d = 0; d < md->ndims; ++d)
    if (md->dims[d] == DNNL_RUNTIME_DIM_VAL || md->format_desc.blocking.strides[d] == DNNL_RUNTIME_DIM_VAL) return true;
  return false;
}

}  // namespace hcops::dnnl
