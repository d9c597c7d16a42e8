// The f64 reference of the output operations (ops/output_ops.h) and the
// error bound of their f32 evaluation, shared by test_ops_output (the kernels
// alone) and test_gemm_epilogue (through the GEMM engine).
//
// Reference, oneDNN 2.6's definitions in forms exact in real arithmetic that
// f64 evaluates without cancellation: y = x + bias_scale * bias; then relu: y
// > 0 ? y : alpha y (alpha = 0: 0, also for NaN, as oneDNN's JIT max(y, 0)); gelu_tanh: y sigmoid(2u),
// 2u = 2 sqrt(2/pi) (y + 0.044715 y^3) (= 0.5 y (1 + tanh u)); gelu_erf:
// 0.5 y erfc(-y / sqrt 2); swish: y sigmoid(alpha y); times act_scale.
//
// Bound of the f32 evaluation from an input x known within e_in, u = 2^-24:
// the bias adds u (|s b| + |x + s b|) (the product and the sum rounded); the
// activation passes an input error on at most L times (its Lipschitz
// constant: max(1, |alpha|) for relu, 1.2 for the GeLUs and swish, whose
// derivatives stay within [-0.17, 1.13] and [-0.1, 1.1]) and adds its own
// error, 8 u |act(y)| times the amplification of its argument's rounding (1 +
// |t| for sigmoid(t) and the tanh GeLU's 2u, 1 + |y| for the erf GeLU);
// act_scale's product one more u; 1e-36 absolute (sigmoid is 0 where exp(-t)
// overflows, y sigmoid(y) ~ 1e-37 there).
#pragma once

#include <algorithm>
#include <cmath>

#include "ops/output_ops.h"

namespace outref {

using hcops::ops::Activation;
using hcops::ops::OutputOps;

constexpr double kU = 0x1p-24;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kKappa = 0.044715;

inline double sigmoid(double t) { return 1 / (1 + std::exp(-t)); }

// The activation's argument whose rounding its f32 evaluation amplifies.
inline double amplification(const OutputOps &o, double y) {
  switch (o.act) {
    case Activation::gelu_tanh: return 1 + std::fabs(2 * kSqrt2OverPi * (y + kKappa * y * y * y));
    case Activation::gelu_erf: return 1 + std::fabs(y);
    case Activation::swish: return 1 + std::fabs(o.act_alpha * y);
    default: return 1;
  }
}

inline double lipschitz(const OutputOps &o) {
  switch (o.act) {
    case Activation::none: return 1;
    case Activation::relu: return std::max(1.0, std::fabs(double(o.act_alpha)));
    default: return 1.2;
  }
}

// act(y), before act_scale.
inline double activation(const OutputOps &o, double y) {
  double r;
  switch (o.act) {
    case Activation::none: return y;
    case Activation::relu: r = y > 0 ? y : o.act_alpha == 0 ? 0.0 : o.act_alpha * y; break;
    case Activation::gelu_tanh: r = y * sigmoid(2 * kSqrt2OverPi * (y + kKappa * y * y * y)); break;
    case Activation::gelu_erf: r = 0.5 * y * std::erfc(-y / std::sqrt(2.0)); break;
    case Activation::swish: r = y * sigmoid(o.act_alpha * y); break;
    default: r = NAN;
  }
  return r;
}

struct Value {
  double v;      // the reference
  double bound;  // of its f32 evaluation
};

// The output operations on x (C's element (i, j)), x within e_in.
inline Value apply(const OutputOps &o, double x, double e_in, long i, long j) {
  double sb = 0;
  if (o.bias) {
    const long at = o.bias_along_rows ? i : j;
    const double b = o.bias_type == hcops::Dtype::bf16 ? double(float(static_cast<const hcops::bf16 *>(o.bias)[at]))
                                                       : double(static_cast<const float *>(o.bias)[at]);
    sb = double(o.bias_scale) * b;
  }
  const double y = x + sb;
  const double e_bias = e_in + (o.bias ? kU * (std::fabs(sb) + std::fabs(y)) : 0.0);
  if (o.act == Activation::none) return {y, e_bias + 1e-36};
  const double a = activation(o, y), r = o.act_scale * a;
  if (!std::isfinite(y)) return {r, 1e-36};  // relu's 0 for -Inf and NaN: exact
  const double own = 8 * kU * std::fabs(a) * amplification(o, y);
  const double bound = std::fabs(double(o.act_scale)) * (lipschitz(o) * e_bias + own) + kU * std::fabs(r) + 1e-36;
  return {r, bound};
}

inline const char *name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::gelu_erf: return "gelu_erf";
    case Activation::swish: return "swish";
  }
  return "?";
}

}  // namespace outref
