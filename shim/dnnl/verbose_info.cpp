#include "shim/dnnl/verbose_info.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include <oneapi/dnnl/dnnl_debug.h>

namespace hcops::dnnl {

namespace {

// A float as `std::ostream << float` prints it (precision 6, %g).
std::string g(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

std::string dim(dnnl_dim_t d) { return d == DNNL_RUNTIME_DIM_VAL ? "*" : std::to_string(d); }

// The plain tag: dims ordered by decreasing stride, ties by decreasing size,
// otherwise kept in place (oneDNN's bubble sort, utils::simultaneous_sort).
std::string tag_str(const dnnl_memory_desc_t *md) {
  const int nd = md->ndims;
  const auto &blk = md->format_desc.blocking;
  for (int d = 0; d < nd; ++d)
    if (blk.strides[d] == DNNL_RUNTIME_DIM_VAL) return "*";
  dnnl_dim_t strides[DNNL_MAX_NDIMS], sizes[DNNL_MAX_NDIMS];
  char chars[DNNL_MAX_NDIMS + 1];
  for (int d = 0; d < nd; ++d) {
    strides[d] = blk.strides[d];
    sizes[d] = md->padded_dims[d];
    chars[d] = static_cast<char>('a' + d);
  }
  for (int i = 0; i + 1 < nd; ++i) {
    bool swapped = false;
    for (int j = 0; j + 1 < nd - i; ++j) {
      dnnl_dim_t res = strides[j + 1] - strides[j];
      if (res == 0) res = sizes[j + 1] - sizes[j];
      if (res > 0) {
        std::swap(strides[j], strides[j + 1]);
        std::swap(sizes[j], sizes[j + 1]);
        std::swap(chars[j], chars[j + 1]);
        swapped = true;
      }
    }
    if (!swapped) break;
  }
  chars[nd] = '\0';
  return chars;
}

}  // namespace

std::string md_str(const dnnl_memory_desc_t *md) {
  if (!md) return "undef::undef::";
  std::string s = dnnl_dt2str(md->data_type);
  s += ':';
  bool padded_dims = false, padded_offsets = false;
  for (int d = 0; d < md->ndims; ++d) {
    padded_dims |= md->dims[d] != md->padded_dims[d];
    padded_offsets |= md->padded_offsets[d] != 0;
  }
  if (padded_dims) s += 'p';
  if (padded_offsets) s += 'o';
  if (md->offset0 != 0) s += '0';
  s += ':';
  s += dnnl_fmt_kind2str(md->format_kind);
  s += ':';
  if (md->format_kind == dnnl_blocked) s += tag_str(md);
  s += ":f" + std::to_string(md->extra.flags);
  return s;
}

std::string dims_str(const dnnl_memory_desc_t *md) {
  std::string s;
  for (int d = 0; md && d < md->ndims; ++d) s += (d ? "x" : "") + dim(md->dims[d]);
  return s;
}

std::string desc_str(const dnnl_memory_desc_t *md) {
  const int nd = md->ndims;
  if (nd >= 6) return dims_str(md);
  if (nd == 1) return "x" + std::to_string(md->dims[0]);
  std::string s = "mb" + std::to_string(md->dims[0]) + "ic" + std::to_string(md->dims[1]);
  if (nd >= 5) s += "id" + std::to_string(md->dims[nd - 3]);
  if (nd >= 4) s += "ih" + std::to_string(md->dims[nd - 2]);
  if (nd >= 3) s += "iw" + std::to_string(md->dims[nd - 1]);
  return s;
}

std::string attr_str(const_dnnl_primitive_desc_t pd) {
  const_dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_get_attr(pd, &attr) != dnnl_success || !attr) return "";
  std::string s;
  dnnl_scratchpad_mode_t spm;
  if (dnnl_primitive_attr_get_scratchpad_mode(attr, &spm) == dnnl_success && spm != dnnl_scratchpad_mode_library)
    s += std::string("attr-scratchpad:") + dnnl_scratchpad_mode2str(spm) + " ";
  dnnl_fpmath_mode_t fpm;
  if (dnnl_primitive_attr_get_fpmath_mode(attr, &fpm) == dnnl_success && fpm != dnnl_fpmath_mode_strict)
    s += std::string("attr-fpmath_mode:") + dnnl_fpmath_mode2str(fpm) + " ";

  dnnl_dim_t count = 0;
  int mask = 0;
  const float *scales = nullptr;
  if (dnnl_primitive_attr_get_output_scales(attr, &count, &mask, &scales) == dnnl_success && scales) {
    const float rt = DNNL_RUNTIME_F32_VAL;
    const bool runtime = std::memcmp(&rt, &scales[0], sizeof rt) == 0;
    if (mask != 0 || count != 1 || scales[0] != 1.0f) {
      s += "attr-oscale:" + std::to_string(mask);
      if (mask == 0 || runtime) s += ":" + (runtime ? std::string("*") : std::to_string(scales[0]));
      s += " ";
    }
  }

  const_dnnl_post_ops_t po = nullptr;
  if (dnnl_primitive_attr_get_post_ops(attr, &po) != dnnl_success || !po || dnnl_post_ops_len(po) == 0) return s;
  s += "attr-post-ops:";
  for (int i = 0; i < dnnl_post_ops_len(po); ++i) {
    if (i) s += '+';
    if (dnnl_post_ops_get_kind(po, i) == dnnl_sum) {
      float scale = 1;
      int32_t zp = 0;
      dnnl_data_type_t dt = dnnl_data_type_undef;
      dnnl_post_ops_get_params_sum_v3(po, i, &scale, &zp, &dt);
      s += "sum";
      if (scale != 1.f || zp != 0 || dt != dnnl_data_type_undef) s += ":" + g(scale);
      if (zp != 0 || dt != dnnl_data_type_undef) s += ":" + std::to_string(zp);
      if (dt != dnnl_data_type_undef) s += std::string(":") + dnnl_dt2str(dt);
    } else if (dnnl_post_ops_get_kind(po, i) == dnnl_eltwise) {
      float scale = 1, alpha = 0, beta = 0;
      dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
      dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &alpha, &beta);
      s += dnnl_alg_kind2str(alg);
      if (alpha != 0.f || beta != 0.f || scale != 1.f) s += ":" + g(alpha);
      if (beta != 0.f || scale != 1.f) s += ":" + g(beta);
      if (scale != 1.f) s += ":" + g(scale);
    }
  }
  return s + " ";
}

VerboseFields matmul_verbose(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *src,
                             const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bias,
                             const dnnl_memory_desc_t *dst) {
  std::string mds = "src_" + md_str(src) + " wei_" + md_str(wei);
  if (bias) {
    int mask = 0;
    for (int d = bias->ndims - 1; d >= 0; --d) mask += bias->dims[d] != 1 ? 1 << d : 0;
    mds += " bia_" + md_str(bias) + "_mask" + std::to_string(mask);
  }
  mds += " dst_" + md_str(dst);
  const std::string problem = dims_str(src) + ":" + dims_str(wei) + ":" + dims_str(dst);
  return {"matmul", "undef," + mds + "," + attr_str(pd) + ",," + problem, "matmul," + problem};
}

VerboseFields inner_product_verbose(const_dnnl_primitive_desc_t pd, dnnl_prop_kind_t prop,
                                    const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *wei,
                                    const dnnl_memory_desc_t *dst) {
  const std::string prop_name = prop == dnnl_forward_training    ? "forward_training"
                                : prop == dnnl_forward_inference ? "forward_inference"
                                : prop == dnnl_backward_data     ? "backward_data"
                                                                 : "backward_weights";
  // 2.6 prints a bias field for every inner product: "bia_undef::undef::f0"
  // when there is none.
  const dnnl_memory_desc_t *bias_md = dnnl_primitive_desc_query_md(
      pd, prop == dnnl_backward_weights ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 1);
  std::string mds = "src_" + md_str(src) + " wei_" + md_str(wei);
  if (bias_md) mds += " bia_" + md_str(bias_md);
  mds += " dst_" + md_str(dst);
  const std::string problem = desc_str(src) + "oc" + std::to_string(wei->dims[0]);
  return {"inner_product", prop_name + "," + mds + "," + attr_str(pd) + ",," + problem,
          "inner_product," + prop_name + "," + problem};
}

}  // namespace hcops::dnnl
