// An execute of a claimed primitive: its memories checked against the plan,
// then one gemm() per batch left after folding (none allocated, no operand
// copied: the engine packs).
#include <oneapi/dnnl/dnnl.h>

#include "gemm/batched.h"
#include "shim/dnnl/decline.h"
#include "shim/dnnl/diff_bias.h"
#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

namespace {

dnnl_memory_t find_arg(int nargs, const dnnl_exec_arg_t *args, int arg) {
  for (int i = 0; i < nargs; ++i)
    if (args[i].arg == arg) return args[i].memory;
  return nullptr;
}

// The data and descriptor of argument `arg`; false when it is missing.
bool memory_of(int nargs, const dnnl_exec_arg_t *args, int arg, void **data, const dnnl_memory_desc_t **md) {
  dnnl_memory_t mem = find_arg(nargs, args, arg);
  if (!mem || dnnl_memory_get_data_handle(mem, data) != dnnl_success) return decline("missing_argument");
  return (dnnl_memory_get_memory_desc(mem, md) == dnnl_success && *md) || decline("missing_argument");
}

// A memory of a runtime-dims plan: the plan's descriptor where that was not
// left to run time (the geometry checks the rest).
bool fits(const dnnl_memory_desc_t *md, const dnnl_memory_desc_t &plan) {
  if (md->ndims != plan.ndims || md->data_type != plan.data_type) return decline("memory_differs");
  for (int d = 0; d < md->ndims; ++d)
    if (plan.dims[d] != DNNL_RUNTIME_DIM_VAL && plan.dims[d] != md->dims[d]) return decline("memory_differs");
  return true;
}

template <typename Ty>
const char *run_gemms(const PrimitivePlan &p, const Geometry &g, const void *a, const void *b, void *c, float alpha,
                      const ops::OutputOps &ops) {
  using A = typename Ty::a_type;
  using C = typename Ty::c_type;
  const A *ea = static_cast<const A *>(g.swapped ? b : a) + g.a_offset;
  const A *eb = static_cast<const A *>(g.swapped ? a : b) + g.b_offset;
  C *ec = static_cast<C *>(c) + g.c_offset;
  GemmArgs<Ty> args{g.ta, g.tb, g.m, g.n, g.k, alpha, ea, g.lda, eb, g.ldb, p.attr.beta, ec, g.ldc};
  // Bias and activation on each block of C while it is in cache; a bf16 C
  // is rounded once, after them (kernels/gemm_types.h, Epilogue).
  std::unique_ptr<float[]> row_bias;  // a bf16 bias in f32, for the kernels that add it themselves
  args.epilogue = ops::output_epilogue(ops, g.m, row_bias);
  // The primitive's strict fpmath attribute (attributes.cpp forwards any
  // other), not HCOPS_FP32_MATH, is the contract of an f32 primitive.
  args.f32_mode = F32Mode::strict;
  return gemm_batched(args, g).family;
}

}  // namespace

bool run_plan(const PrimitivePlan &p, int nargs, const dnnl_exec_arg_t *args, const char **family) {
  void *a, *b, *c, *bias = nullptr;
  const dnnl_memory_desc_t *ma, *mb, *mc, *mbias = nullptr;
  if (!memory_of(nargs, args, p.memory.arg_a, &a, &ma) || !memory_of(nargs, args, p.memory.arg_b, &b, &mb) ||
      !memory_of(nargs, args, p.memory.arg_c, &c, &mc))
    return false;
  if (p.memory.arg_bias && !memory_of(nargs, args, p.memory.arg_bias, &bias, &mbias)) return false;
  // A memory that is not what the primitive was made for is libdnnl's to
  // judge.
  Geometry rt;
  const Geometry *g = &p.geometry.gemm;
  if (p.geometry.runtime) {
    if (!fits(ma, p.memory.md_a) || !fits(mb, p.memory.md_b) || !fits(mc, p.memory.md_c) || (mbias && !fits(mbias, p.memory.md_bias))) return false;
    if (!p.geometry.runtime(ma, mb, mc, mbias, &rt)) return false;
    g = &rt;
  } else if (!dnnl_memory_desc_equal(ma, &p.memory.md_a) || !dnnl_memory_desc_equal(mb, &p.memory.md_b) ||
             !dnnl_memory_desc_equal(mc, &p.memory.md_c) || (mbias && !dnnl_memory_desc_equal(mbias, &p.memory.md_bias))) {
    return decline("memory_differs");
  }
  // (An empty memory may have no buffer.)
  const bool empty = g->batches() == 0 || g->m == 0 || g->n == 0;
  if ((!empty && g->k > 0 && (!a || !b)) || (!empty && !c) || (p.memory.arg_bias && !bias && !empty))
    return decline("null_buffer");
  float alpha = p.attr.alpha;
  if (p.attr.runtime_scale) {
    void *s;
    const dnnl_memory_desc_t *ms;
    if (!memory_of(nargs, args, DNNL_ARG_ATTR_OUTPUT_SCALES, &s, &ms)) return false;
    if (!s) return decline("null_buffer");
    alpha = *static_cast<const float *>(s);
  }
  void *diff_bias = nullptr;
  if (p.memory.arg_diff_bias) {
    const dnnl_memory_desc_t *md;
    if (!memory_of(nargs, args, p.memory.arg_diff_bias, &diff_bias, &md)) return false;
    if (!diff_bias) return decline("null_buffer");
    if (!dnnl_memory_desc_equal(md, &p.memory.md_diff_bias)) return decline("memory_differs");
  }

  ops::OutputOps ops = p.attr.ops;
  if (bias) {
    ops.bias = static_cast<const char *>(bias) + mbias->offset0 * (p.attr.ops.bias_type == Dtype::bf16 ? 2 : 4);
    ops.bias_scale = alpha;                            // oscale * (src * wei + bias)
    ops.bias_along_rows = g->bias_rows != g->swapped;  // on the engine's C
  }
  switch (p.types) {
    case Types::f32: *family = run_gemms<Sgemm>(p, *g, a, b, c, alpha, ops); break;
    case Types::bf16_f32: *family = run_gemms<Bf16Gemm>(p, *g, a, b, c, alpha, ops); break;
    case Types::bf16_bf16: *family = run_gemms<Bf16Bf16Gemm>(p, *g, a, b, c, alpha, ops); break;
  }
  if (diff_bias) reduce_diff_bias(p.geometry.diff_dst, p.memory.md_a.data_type, a, p.memory.md_diff_bias.data_type, diff_bias);
  return true;
}

}  // namespace hcops::dnnl
