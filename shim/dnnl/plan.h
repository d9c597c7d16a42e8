// What HCOps runs for a oneDNN primitive it claimed: one column-major GEMM
// (gemm/gemm.h) per batch, or one for all batches when they fold into M or
// N, with oneDNN's attributes mapped onto it. Built once from the real
// primitive descriptor (matmul.cpp, inner_product.cpp), run by every
// execute (run_plan).
//
// oneDNN 2.6 computes (checked by running it, tests/dnnl/test_dnnl_prim):
//   dst = act_scale * act(oscale * (src * wei + bias) + sum_scale * dst)
// with an eltwise after the sum (an eltwise before it is not claimed). On
// the engine: alpha = oscale, beta = sum_scale, and the epilogue adds
// oscale * bias, then the activation.
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "gemm/gemm.h"
#include "gemm/matmul_geometry.h"
#include "ops/output_ops.h"
#include "shim/dnnl/verbose_info.h"

namespace hcops::dnnl {

// A memory's batch dimensions are all but its last two.
static_assert(DNNL_MAX_NDIMS - 2 <= kMaxBatchDims, "a Matrix holds every batch dimension of a memory");

// The engine's datatypes: f32 (Sgemm), bf16 -> f32 (Bf16Gemm), bf16 -> bf16 (Bf16Bf16Gemm).
enum class Types : uint8_t { f32, bf16_f32, bf16_bf16 };

// The 2-D matrix of the last two dims of a plain descriptor without
// runtime values, the others its batch; false when it is not one.
bool matrix_of(const dnnl_memory_desc_t *md, Matrix *x);

// A plain (blocked, no inner blocks) descriptor of f32 or bf16 with no
// padding: what HCOps reads and writes.
bool plain_md(const dnnl_memory_desc_t *md);
bool has_runtime_dims(const dnnl_memory_desc_t *md);

// Where the GEMM runs: its geometry over A, B and C, or how to make it at
// execute.
struct PlanGeometry {
  Geometry gemm;
  // Runtime dims (matmul): the geometry is made at execute from the
  // memories' own descriptors by `runtime` (oneDNN's src, weights, dst,
  // bias: A, B, C, bias), which checks them.
  bool (*runtime)(const dnnl_memory_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,
                  const dnnl_memory_desc_t *, Geometry *) = nullptr;
  // backward_weights with bias: diff_bias[oc] = sum over n of diff_dst[n, oc].
  Matrix diff_dst;  // N x OC (oneDNN's A is its transpose)
};

// Which execute arguments are A, B, C and the biases, and the descriptors
// an execute's memories must match.
struct PlanMemory {
  // The DNNL_ARG_* of oneDNN's A, B and C.
  int arg_a = 0, arg_b = 0, arg_c = 0;
  // The primitive descriptor's memory descriptors of A, B, C and the bias
  // (format_kind undef when none).
  dnnl_memory_desc_t md_a{}, md_b{}, md_c{}, md_bias{};
  int arg_bias = 0;  // 0: no bias
  int arg_diff_bias = 0;
  dnnl_memory_desc_t md_diff_bias{};
};

// oneDNN's attributes on the engine (read_attributes).
struct PlanAttributes {
  float alpha = 1.0f;          // output scale
  bool runtime_scale = false;  // from DNNL_ARG_ATTR_OUTPUT_SCALES
  float beta = 0.0f;           // sum post-op's scale
  ops::OutputOps ops;          // bias (pointer set at execute) and activation
};

struct PrimitivePlan {
  dnnl_primitive_kind_t kind = dnnl_matmul;
  Types types = Types::f32;
  PlanGeometry geometry;
  PlanMemory memory;
  PlanAttributes attr;
  VerboseFields verbose;  // verbose_info.h
};

// Attributes: output scales, post-ops, and the checks that nothing else is
// set. False: not claimed.
bool read_attributes(const_dnnl_primitive_desc_t pd, PlanAttributes *attr);

// Runs the plan on the arguments of an execute. Returns false, having done
// nothing, when they do not fit it (a missing argument, a memory whose
// descriptor is not the plan's): the caller hands the call to libdnnl.
// `family`: the kernel family that ran.
bool run_plan(const PrimitivePlan &plan, int nargs, const dnnl_exec_arg_t *args, const char **family);

}  // namespace hcops::dnnl
