#include "shim/dnnl/plan.h"

#include <algorithm>

#include "shim/dnnl/decline.h"

namespace hcops::dnnl {

bool matrix_of(const dnnl_memory_desc_t *md, Matrix *x) {
  if (!plain_md(md)) return false;
  if (md->ndims < 2) return decline("ndims");
  if (has_runtime_dims(md)) return decline("runtime_dims");
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

bool plain_md(const dnnl_memory_desc_t *md) {
  if (!md || md->ndims < 1) return decline("no_memory");
  if (md->format_kind != dnnl_blocked) return decline("format_any");
  if (md->data_type != dnnl_f32 && md->data_type != dnnl_bf16) return decline("datatype");
  if (md->format_desc.blocking.inner_nblks != 0) return decline("format_blocked");
  if (md->extra.flags != 0) return decline("md_extra");
  for (int d = 0; d < md->ndims; ++d)
    if (md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0) return decline("padded");
  return true;
}

bool has_runtime_dims(const dnnl_memory_desc_t *md) {
  if (md->offset0 == DNNL_RUNTIME_DIM_VAL) return true;
  for (int d = 0; d < md->ndims; ++d)
    if (md->dims[d] == DNNL_RUNTIME_DIM_VAL || md->format_desc.blocking.strides[d] == DNNL_RUNTIME_DIM_VAL) return true;
  return false;
}

}  // namespace hcops::dnnl
