// The bias and activation of ops::OutputOps applied to C after the GEMM,
// in a second pass: the stand-in for GemmArgs::epilogue =
// ops::output_epilogue() (dnnl-epi's), which applies them while each block
// is in cache and rounds a bf16 C once. Same arithmetic, one pass more; a
// bf16 C is rounded twice.
#pragma once

#include "common/dtype.h"
#include "ops/output_ops.h"

namespace hcops::dnnl {

// C: m x n, column-major, leading dimension ldc.
void apply_after(const ops::OutputOps &ops, float *c, long ldc, long m, long n);
void apply_after(const ops::OutputOps &ops, bf16 *c, long ldc, long m, long n);

}  // namespace hcops::dnnl
