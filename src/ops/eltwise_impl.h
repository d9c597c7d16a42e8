// GeLU and SiLU, forward and backward (ops/eltwise.h), written once against
// a family's f32 vector traits `F` and instantiated by ops/family_table.cpp.
//
// PyTorch 1.13's formulas (aten/src/ATen/native/cpu/Activation.cpp), in
// forms equal to them in exact arithmetic that stay accurate in f32 where
// theirs cancel:
// - tanh GeLU: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is
//   x sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)): one exp and no 1 + tanh
//   cancellation for x < 0. Its derivative 0.5 (1 + tanh u) + 0.5 x (1 -
//   tanh^2 u) u' is s + (s c) x 2u' with s = sigmoid(2u), c = 1 - s
//   (1 - tanh^2 u = 4 s c), c computed without cancellation (vmath::sigmoid2).
//   The product keeps PyTorch's order (the tanh derivative times x before the
//   inner derivative) so that |x| > 1.8e19, where x^2 overflows, gives NaN
//   as PyTorch does, and 0 below.
// - erf GeLU: 0.5 x (1 + erf(x / sqrt 2)) is 0.5 x erfc(-x / sqrt 2), with
//   erfc's argument squared as x^2 / 2 from x itself (plus its rounding
//   error): accurate in relative terms far into the negative tail. Backward
//   dy (cdf + x pdf), pdf = exp(-x^2 / 2) / sqrt(2 pi).
// - SiLU: x sigmoid(x); backward dy s (1 + x (1 - s)).
// Infinities and NaN come out as PyTorch's: gelu(+Inf) = +Inf, gelu(-Inf) =
// NaN, silu(-Inf) = NaN, every backward at +-Inf NaN, NaN in NaN out.
//
// Each loop runs whole vectors and ends with one masked vector: no scalar
// tail. bf16 data is widened to f32 on load and rounded to nearest even on
// store.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/dtype.h"
#include "ops/eltwise.h"
#include "ops/transpose.h"
#include "ops/transpose_impl.h"
#include "ops/vmath.h"

namespace hcops::ops::eltwise {

template <class F>
using V = typename F::V;

template <class F>
HCOPS_VINLINE V<F> load(const float *p) {
  return F::loadu(p);
}
template <class F>
HCOPS_VINLINE V<F> load(const float *p, typename F::Mask m) {
  return F::loadu(p, m);
}
template <class F>
HCOPS_VINLINE void store(float *p, V<F> v) {
  F::storeu(p, v);
}
template <class F>
HCOPS_VINLINE void store(float *p, V<F> v, typename F::Mask m) {
  F::storeu(p, v, m);
}
template <class F>
HCOPS_VINLINE V<F> load(const bf16 *p) {
  return F::load_bf16(reinterpret_cast<const uint16_t *>(p));
}
template <class F>
HCOPS_VINLINE V<F> load(const bf16 *p, typename F::Mask m) {
  return F::load_bf16(reinterpret_cast<const uint16_t *>(p), m);
}
template <class F>
HCOPS_VINLINE void store(bf16 *p, V<F> v) {
  F::store_bf16(reinterpret_cast<uint16_t *>(p), v);
}
template <class F>
HCOPS_VINLINE void store(bf16 *p, V<F> v, typename F::Mask m) {
  F::store_bf16(reinterpret_cast<uint16_t *>(p), v, m);
}

// y[i] = op(x[i]); y may be x. Four vectors an iteration, as four
// independent chains: op is one long dependency chain (exp, a division, the
// bf16 rounding), and with one vector an iteration the loop ran at about one
// instruction a cycle. On the Xeon with AMX, tanh GeLU on 3 M elements, 2
// threads: bf16 1.24 -> 1.03-1.07 ms, f32 1.10 -> 0.92-1.04 ms.
template <class F, class T, class Op>
inline void map1(const T *x, T *y, int64_t n, Op op) {
  int64_t i = 0;
  for (; i + 4 * F::lanes <= n; i += 4 * F::lanes) {
    const V<F> a = op(load<F>(x + i)), b = op(load<F>(x + i + F::lanes));
    const V<F> c = op(load<F>(x + i + 2 * F::lanes)), d = op(load<F>(x + i + 3 * F::lanes));
    store<F>(y + i, a);
    store<F>(y + i + F::lanes, b);
    store<F>(y + i + 2 * F::lanes, c);
    store<F>(y + i + 3 * F::lanes, d);
  }
  for (; i + F::lanes <= n; i += F::lanes) store<F>(y + i, op(load<F>(x + i)));
  if (i < n) {
    const auto m = F::mask(static_cast<int>(n - i));
    store<F>(y + i, op(load<F>(x + i, m)), m);
  }
}

// dx[i] = dy[i] * op(x[i]); dx may be dy or x.
template <class F, class T, class Op>
inline void map_grad(const T *dy, const T *x, T *dx, int64_t n, Op op) {
  int64_t i = 0;
  const auto one = [&](int64_t j) { return F::mul(load<F>(dy + j), op(load<F>(x + j))); };
  for (; i + 4 * F::lanes <= n; i += 4 * F::lanes) {  // as map1: four chains
    const V<F> a = one(i), b = one(i + F::lanes), c = one(i + 2 * F::lanes), d = one(i + 3 * F::lanes);
    store<F>(dx + i, a);
    store<F>(dx + i + F::lanes, b);
    store<F>(dx + i + 2 * F::lanes, c);
    store<F>(dx + i + 3 * F::lanes, d);
  }
  for (; i + F::lanes <= n; i += F::lanes) store<F>(dx + i, one(i));
  if (i < n) {
    const auto m = F::mask(static_cast<int>(n - i));
    store<F>(dx + i, F::mul(load<F>(dy + i, m), op(load<F>(x + i, m))), m);
  }
}

// sqrt(2/pi) and 0.044715 of PyTorch's tanh GeLU, folded: 2u = x (k1 + k3 x^2),
// 2u' = k1 + 3 k3 x^2.
constexpr double kBeta = 0.7978845608028654;  // M_SQRT2 * M_2_SQRTPI * 0.5
constexpr double kKappa = 0.044715;
constexpr float kTanhK1 = static_cast<float>(2 * kBeta);
constexpr float kTanhK3 = static_cast<float>(2 * kBeta * kKappa);
constexpr float kTanhK3x3 = static_cast<float>(6 * kBeta * kKappa);
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

template <class F>
HCOPS_VINLINE V<F> gelu_tanh(V<F> x) {
  const V<F> x2 = F::mul(x, x);
  const V<F> w = F::mul(x, F::fmadd(F::set1(kTanhK3), x2, F::set1(kTanhK1)));
  return F::mul(x, vmath::sigmoid<F>(w));
}

template <class F>
HCOPS_VINLINE V<F> gelu_tanh_grad(V<F> x) {
  const V<F> x2 = F::mul(x, x);
  const V<F> w = F::mul(x, F::fmadd(F::set1(kTanhK3), x2, F::set1(kTanhK1)));
  V<F> s, c;
  vmath::sigmoid2<F>(w, s, c);
  const V<F> dw = F::fmadd(F::set1(kTanhK3x3), x2, F::set1(kTanhK1));
  return F::fmadd(F::mul(F::mul(s, c), x), dw, s);
}

// 2 Phi(x) = erfc(-x / sqrt 2), with (x / sqrt 2)^2 = x^2 / 2 = hi + lo.
template <class F>
HCOPS_VINLINE V<F> two_cdf(V<F> x, V<F> &hi, V<F> &lo) {
  const V<F> half = F::set1(0.5f);
  const V<F> x2 = F::mul(x, x);
  hi = F::mul(x2, half);
  lo = F::mul(vmath::square_error<F>(x, x2), half);
  return vmath::erfc_z2<F>(F::mul(x, F::set1(-kSqrtHalf)), hi, lo);
}

template <class F>
HCOPS_VINLINE V<F> gelu_erf(V<F> x) {
  V<F> hi, lo;
  return F::mul(F::mul(x, F::set1(0.5f)), two_cdf<F>(x, hi, lo));
}

template <class F>
HCOPS_VINLINE V<F> gelu_erf_grad(V<F> x) {
  V<F> hi, lo;
  const V<F> cdf = F::mul(two_cdf<F>(x, hi, lo), F::set1(0.5f));
  const V<F> pdf = F::mul(vmath::exp_hl<F>(F::sub(F::zero(), hi), F::sub(F::zero(), lo)), F::set1(kInvSqrt2Pi));
  return F::fmadd(x, pdf, cdf);
}

template <class F>
HCOPS_VINLINE V<F> silu(V<F> x) {
  return F::mul(x, vmath::sigmoid<F>(x));
}

template <class F>
HCOPS_VINLINE V<F> silu_grad(V<F> x) {
  V<F> s, c;
  vmath::sigmoid2<F>(x, s, c);
  return F::mul(s, F::fmadd(x, c, F::set1(1.0f)));
}

template <class F, class T>
void gelu_forward(const T *x, T *y, int64_t n, GeluApprox a) {
  if (a == GeluApprox::tanh) map1<F>(x, y, n, [](V<F> v) { return gelu_tanh<F>(v); });
  else map1<F>(x, y, n, [](V<F> v) { return gelu_erf<F>(v); });
}

template <class F, class T>
void gelu_backward(const T *dy, const T *x, T *dx, int64_t n, GeluApprox a) {
  if (a == GeluApprox::tanh) map_grad<F>(dy, x, dx, n, [](V<F> v) { return gelu_tanh_grad<F>(v); });
  else map_grad<F>(dy, x, dx, n, [](V<F> v) { return gelu_erf_grad<F>(v); });
}

template <class F, class T>
void silu_forward(const T *x, T *y, int64_t n) {
  map1<F>(x, y, n, [](V<F> v) { return silu<F>(v); });
}

template <class F, class T>
void silu_backward(const T *dy, const T *x, T *dx, int64_t n) {
  map_grad<F>(dy, x, dx, n, [](V<F> v) { return silu_grad<F>(v); });
}

template <class F>
void to_bf16(const float *x, bf16 *y, int64_t n) {
  int64_t i = 0;
  for (; i + F::lanes <= n; i += F::lanes) store<F>(y + i, load<F>(x + i));
  if (i < n) {
    const auto m = F::mask(static_cast<int>(n - i));
    store<F>(y + i, load<F>(x + i, m), m);
  }
}

template <class F>
void from_bf16(const bf16 *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 2 * F::lanes <= n; i += 2 * F::lanes) {
    const V<F> a = load<F>(x + i), b = load<F>(x + i + F::lanes);
    store<F>(y + i, a);
    store<F>(y + i + F::lanes, b);
  }
  for (; i + F::lanes <= n; i += F::lanes) store<F>(y + i, load<F>(x + i));
  if (i < n) {
    const auto m = F::mask(static_cast<int>(n - i));
    store<F>(y + i, load<F>(x + i, m), m);
  }
}

// One row of out = x op y, x and y of their own types (ops/eltwise.h's
// binary_rows): f32 arithmetic, one rounding into a bf16 out. Two vectors an
// iteration (a load, an add or multiply and a store each: the loop is
// bound by memory, not by a chain).
template <class F, bool Mul, class Tx, class Ty, class To>
inline void binary_row(const Tx *x, const Ty *y, To *out, int64_t n) {
  auto op = [](V<F> a, V<F> b) { return Mul ? F::mul(a, b) : F::add(a, b); };
  int64_t i = 0;
  for (; i + 2 * F::lanes <= n; i += 2 * F::lanes) {
    store<F>(out + i, op(load<F>(x + i), load<F>(y + i)));
    store<F>(out + i + F::lanes, op(load<F>(x + i + F::lanes), load<F>(y + i + F::lanes)));
  }
  for (; i + F::lanes <= n; i += F::lanes) store<F>(out + i, op(load<F>(x + i), load<F>(y + i)));
  if (i < n) {
    const auto m = F::mask(static_cast<int>(n - i));
    store<F>(out + i, op(load<F>(x + i, m), load<F>(y + i, m)), m);
  }
}

// Rows [r0, r1) with y transposed (BinaryRows::y_batch_rows): a band of at
// most kTransposeTile rows of one batch at a time, y's part of it copied
// transposed (ops/transpose_impl.h) into a buffer of kTransposedBytes,
// as many columns at a time as it holds (256 f32, 512 bf16), then the rows'
// loop on x and the buffer. y's lines are each read once, and the
// arithmetic is the rows' (the same operations on the same values: bit for
// bit). 32 KiB, a whole Zen 4 L1: half of it was slower there for DiT-S/2's
// f32 + bf16 residual add, cold, alternated (2 threads 0.39-0.48 ms a call
// against 0.41-0.63; rows of 384 bf16 then take two passes).
constexpr int64_t kTransposedBytes = 32 << 10;

template <class F, bool Mul, class Tx, class Ty, class To>
void binary_rows_y_transposed(const BinaryRows &b, int64_t r0, int64_t r1) {
  constexpr int64_t kCols = kTransposedBytes / (kTransposeTile * int64_t(sizeof(Ty)));
  const Tx *x = static_cast<const Tx *>(b.x);
  const Ty *y = static_cast<const Ty *>(b.y);
  To *out = static_cast<To *>(b.out);
  alignas(64) Ty band[kTransposeTile * kCols];
  for (int64_t r = r0; r < r1;) {
    const int64_t q = r / b.y_batch_rows, i0 = r % b.y_batch_rows;
    const int64_t rows = std::min({kTransposeTile, r1 - r, b.y_batch_rows - i0});
    const Ty *yq = y + q * b.y_batch_stride + i0;
    for (int64_t j0 = 0; j0 < b.cols; j0 += kCols) {
      const int64_t cols = std::min(kCols, b.cols - j0);
      transposing::transpose_copy<F>(yq + j0 * b.y_ld, b.y_ld, band, kCols, rows, cols);
      for (int64_t i = 0; i < rows; ++i)
        binary_row<F, Mul>(x + (r + i) / b.x_every * b.x_ld + j0, band + i * kCols, out + (r + i) * b.cols + j0,
                           cols);
    }
    r += rows;
  }
}

template <class F, bool Mul, class Tx, class Ty, class To>
void binary_rows_typed(const BinaryRows &b, int64_t r0, int64_t r1) {
  if (b.y_batch_rows > 0) return binary_rows_y_transposed<F, Mul, Tx, Ty, To>(b, r0, r1);
  const Tx *x = static_cast<const Tx *>(b.x);
  const Ty *y = static_cast<const Ty *>(b.y);
  To *out = static_cast<To *>(b.out);
  for (int64_t r = r0; r < r1; ++r)
    binary_row<F, Mul>(x + r / b.x_every * b.x_ld, y + r / b.y_every * b.y_ld, out + r * b.cols, b.cols);
}

// The instantiation for b's operation and types.
template <class F>
void binary_rows(const BinaryRows &b, int64_t r0, int64_t r1) {
  const bool mul = b.op == BinaryOp::mul;
  const int types = (b.x_type == Dtype::bf16) * 4 + (b.y_type == Dtype::bf16) * 2 + (b.out_type == Dtype::bf16);
  auto run = [&](auto tx, auto ty, auto to) {
    using Tx = decltype(tx);
    using Ty = decltype(ty);
    using To = decltype(to);
    if (mul) binary_rows_typed<F, true, Tx, Ty, To>(b, r0, r1);
    else binary_rows_typed<F, false, Tx, Ty, To>(b, r0, r1);
  };
  switch (types) {
    case 0: run(float(), float(), float()); break;
    case 1: run(float(), float(), bf16()); break;
    case 2: run(float(), bf16(), float()); break;
    case 3: run(float(), bf16(), bf16()); break;
    case 4: run(bf16(), float(), float()); break;
    case 5: run(bf16(), float(), bf16()); break;
    case 6: run(bf16(), bf16(), float()); break;
    default: run(bf16(), bf16(), bf16()); break;
  }
}

}  // namespace hcops::ops::eltwise
