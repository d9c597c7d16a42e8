// The output operations (ops/output_ops.h) on one m x n column-major f32
// block, written once against a family's f32 vector traits `F` and
// instantiated by ops/family_table.cpp. A column of C is contiguous:
// each column is one pass of whole vectors and one masked vector, with the
// bias added and the activation applied in that pass (the block is in cache;
// two passes would read it twice).
//
// oneDNN 2.6's definitions (its eltwise documentation, math_utils.hpp),
// after x += bias_scale * bias:
// - relu: x > 0 ? x : alpha x (NaN stays NaN). With alpha = 0, max(x, 0) as
//   oneDNN 2.6's JIT kernels compute it (checked against the real library
//   on this machine): relu(-Inf) = 0, not 0 * -Inf, and relu(NaN) = 0.
// - gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) and gelu_erf:
//   0.5 x (1 + erf(x / sqrt 2)): ops/eltwise_impl.h's kernels (the same
//   functions, in forms that stay accurate in f32); alpha and beta unused.
// - swish: x sigmoid(alpha x); alpha = 1 is eltwise_impl.h's SiLU.
// then x = act_scale * act(x). No activation: no act_scale either.
#pragma once

#include "common/dtype.h"
#include "ops/eltwise_impl.h"
#include "ops/output_ops.h"
#include "ops/vmath.h"

namespace hcops::ops::output {

template <class F>
using V = typename F::V;

// The activation kernels: Activation split further where a parameter value
// has a cheaper or a different form.
enum class Kind { none, relu0, relu, gelu_tanh, gelu_erf, silu, swish };
enum class BiasKind { none, rows_f32, rows_bf16, column };

template <class F, Kind K>
HCOPS_VINLINE V<F> activate(V<F> x, V<F> alpha, V<F> scale) {
  V<F> y;
  if constexpr (K == Kind::none) return x;
  // max returns its second operand when either is NaN: relu(NaN) = 0.
  else if constexpr (K == Kind::relu0) y = F::max(x, F::zero());
  else if constexpr (K == Kind::relu) y = F::select(F::gt(x, F::zero()), x, F::mul(x, alpha));
  else if constexpr (K == Kind::gelu_tanh) y = eltwise::gelu_tanh<F>(x);
  else if constexpr (K == Kind::gelu_erf) y = eltwise::gelu_erf<F>(x);
  else if constexpr (K == Kind::silu) y = eltwise::silu<F>(x);
  else y = F::mul(x, vmath::sigmoid<F>(F::mul(alpha, x)));
  return F::mul(y, scale);
}

template <class F, Kind K, BiasKind B>
void run(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  const V<F> bias_scale = F::set1(ops.bias_scale), alpha = F::set1(ops.act_alpha), scale = F::set1(ops.act_scale);
  const float *rows_f32 = B == BiasKind::rows_f32 ? static_cast<const float *>(ops.bias) + i0 : nullptr;
  const bf16 *rows_bf16 = B == BiasKind::rows_bf16 ? static_cast<const bf16 *>(ops.bias) + i0 : nullptr;
  for (long j = 0; j < n; ++j) {
    float *col = c + j * ldc;
    V<F> col_bias = F::zero();
    if constexpr (B == BiasKind::column) {
      const float b = ops.bias_type == Dtype::bf16 ? float(static_cast<const bf16 *>(ops.bias)[j0 + j])
                                                   : static_cast<const float *>(ops.bias)[j0 + j];
      col_bias = F::set1(ops.bias_scale * b);
    }
    auto biased = [&](V<F> x, long i, auto... mask) {
      if constexpr (B == BiasKind::rows_f32)
        return F::add(x, F::mul(bias_scale, eltwise::load<F>(rows_f32 + i, mask...)));
      else if constexpr (B == BiasKind::rows_bf16)
        return F::add(x, F::mul(bias_scale, eltwise::load<F>(rows_bf16 + i, mask...)));
      else if constexpr (B == BiasKind::column) return F::add(x, col_bias);
      else return x;
    };
    long i = 0;
    for (; i + F::lanes <= m; i += F::lanes)
      F::storeu(col + i, activate<F, K>(biased(F::loadu(col + i), i), alpha, scale));
    if (i < m) {
      const auto mask = F::mask(static_cast<int>(m - i));
      F::storeu(col + i, activate<F, K>(biased(F::loadu(col + i, mask), i, mask), alpha, scale), mask);
    }
  }
}

template <class F, Kind K>
void with_bias(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  if (ops.bias == nullptr) run<F, K, BiasKind::none>(ops, c, ldc, i0, m, j0, n);
  else if (!ops.bias_along_rows) run<F, K, BiasKind::column>(ops, c, ldc, i0, m, j0, n);
  else if (ops.bias_type == Dtype::bf16) run<F, K, BiasKind::rows_bf16>(ops, c, ldc, i0, m, j0, n);
  else run<F, K, BiasKind::rows_f32>(ops, c, ldc, i0, m, j0, n);
}

template <class F>
void apply(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  if (m <= 0 || n <= 0 || ops.empty()) return;
  switch (ops.act) {
    case Activation::none: return with_bias<F, Kind::none>(ops, c, ldc, i0, m, j0, n);
    case Activation::relu:
      if (ops.act_alpha == 0.0f) return with_bias<F, Kind::relu0>(ops, c, ldc, i0, m, j0, n);
      return with_bias<F, Kind::relu>(ops, c, ldc, i0, m, j0, n);
    case Activation::gelu_tanh: return with_bias<F, Kind::gelu_tanh>(ops, c, ldc, i0, m, j0, n);
    case Activation::gelu_erf: return with_bias<F, Kind::gelu_erf>(ops, c, ldc, i0, m, j0, n);
    case Activation::swish:
      if (ops.act_alpha == 1.0f) return with_bias<F, Kind::silu>(ops, c, ldc, i0, m, j0, n);
      return with_bias<F, Kind::swish>(ops, c, ldc, i0, m, j0, n);
  }
}

}  // namespace hcops::ops::output
