// What oneDNN's attributes do to a product before it is stored, as a GEMM
// epilogue (kernels/gemm_types.h, Epilogue): a bias and one eltwise post-op, applied
// to a block of the f32 accumulator while it is in cache. Output scales and
// a sum post-op need no epilogue: they are GEMM's alpha and beta. The ABI
// layer (shim/dnnl/) maps a primitive's attributes onto this; the engine
// knows nothing of oneDNN.
#pragma once

#include "common/api.h"
#include <cstdint>
#include <memory>

#include "common/dtype.h"
#include "kernels/gemm_types.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// The activations with a vectorised kernel here (ops/eltwise.h's GeLU and
// SiLU, and ReLU), with oneDNN's parameters: relu(x) = x > 0 ? x : alpha x
// (alpha = 0: max(x, 0), so relu(-Inf) = 0 and relu(NaN) = 0, as oneDNN
// 2.6's JIT kernels give them); swish(x) = x sigmoid(alpha x); the GeLUs
// ignore alpha and beta.
enum class Activation : uint8_t { none, relu, gelu_tanh, gelu_erf, swish };

struct OutputOps {
  // Bias: x += bias_scale * bias[i] (along_rows: one per row of C) or
  // bias[j] (one per column), f32 or bf16. nullptr: none.
  const void *bias = nullptr;
  Dtype bias_type = Dtype::f32;
  bool bias_along_rows = false;
  float bias_scale = 1.0f;
  // Then x = act_scale * act(x) (none: x as it is, act_scale unused).
  Activation act = Activation::none;
  float act_alpha = 0.0f, act_beta = 0.0f, act_scale = 1.0f;

  bool empty() const { return bias == nullptr && act == Activation::none; }
};

// Applies `ops` to rows [i0, i0 + m), columns [j0, j0 + n) of C at c
// (pointing at C(i0, j0), leading dimension ldc), on the kernel family that
// serves the operators (ops/family.h), serially: the GEMM's thread calls it.
void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n);

// The Epilogue for GemmArgs::epilogue: applies `*ops` (which must outlive the
// gemm() call); an empty one when ops.empty().
Epilogue<float> output_epilogue(const OutputOps &ops);

// The same, for a C of m rows, with Epilogue::row_bias set where `ops` is a
// bias along C's rows alone with bias_scale 1 (nn.Linear's forward): the
// f32 bias itself, or a bf16 bias converted into `storage` (m floats,
// allocated here; without memory for it, row_bias stays null). x + 1 *
// bias[i] and x + row_bias[i] are the same f32 addition.
Epilogue<float> output_epilogue(const OutputOps &ops, long m, std::unique_ptr<float[]> &storage);

}  // namespace hcops::ops
HCOPS_API_END
