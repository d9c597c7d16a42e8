// LayerNorm over rows, forward and backward, on a family's vector traits F,
// in f32 whatever the data (T) and parameter (P) types. Included by the
// family tables (ops/family_table.cpp).
//
// Moments: a corrected two-pass over the row (in L1 after the first pass):
// m0 = sum(x / n), then d = x - m0, mean = m0 + sum(d) / n and
// var = sum(d^2) / n - (sum(d) / n)^2. The deviations from m0 are exact or
// nearly so, so a large offset (mean 1e4, std 1) costs no accuracy, where
// E[x^2] - E[x]^2 would lose it all; the sums are blocked and pairwise
// (row_loops.h), so the error does not grow with the row's length beyond
// a few ulps per doubling: rstd within 1e-7 relative of the f64 value on a
// row of 9.4 M uniform elements (tests/ops/test_ops_layer_norm).
// rstd = 1 / sqrt(max(var, 0) + eps) as PyTorch. x / n keeps m0 finite for
// rows near FLT_MAX (a row of 3e38: mean 3e38, var 0, as PyTorch).
// Non-finite cases: a NaN or an Inf in a row makes its mean (Inf - Inf in
// sum(d)), var, rstd and outputs NaN, as PyTorch's Welford (whose mean is
// sometimes +-Inf, depending on where the Inf sits in its lanes). A finite
// row whose f32 sum of squares (or sum(d)^2) overflows takes a slower path
// in f64 (layer_norm_moments_f64): a variance over FLT_MAX gives rstd and
// outputs NaN, as PyTorch 1.13 ([3e38, -3e38, 1, 2], +-2e19 alternating; under
// PyTorch 2.x rstd 0 and y = beta, as 2.x: ops::variance_overflow()), and a
// mean NaN too where the range overflows f32 (PyTorch's running difference
// does, then Inf - Inf); a variance that fits f32 gets its true rstd (+-1e19
// alternating: 1e-19, where PyTorch's f32 sum of squares overflows to rstd 0).
// Deliberately not PyTorch's: a row whose mean exceeds 1.8e19 in magnitude
// gets its true moments (a row of 3e38: var 0), where PyTorch 1.13's
// combination of its lanes multiplies an overflowed delta^2 by a count of 0
// and returns rstd NaN.
//
// Backward, from the saved mean and rstd, with xhat = (x - mean) * rstd and
// g = gamma (1 when null): dx = rstd * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat)),
// PyTorch's formula written on xhat rather than on x, so a large offset does
// not cancel. g*dy is rounded as a value of its own in both passes (no FMA
// contraction into the subtraction): a row of one element (xhat = 0,
// mean(g*dy) = g*dy) then gets dx = 0 exactly, as in f64, where a fused
// g*dy - mean(g*dy) left the product's rounding error times rstd (1e-6 for
// rstd = 1/sqrt(eps); PyTorch's own kernel leaves such an error too). The parameter gradients add each row's dy * xhat and dy into
// the f32 accumulators in row order, so splitting the rows over several calls
// gives the same bits as one call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "common/dtype.h"
#include "ops/layer_norm.h"
#include "ops/row_loops.h"
#include "ops/transpose.h"
#include "ops/transpose_impl.h"
#include "ops/vmath.h"

namespace hcops::ops::rows {

// The moments of a finite row whose f32 sum of squares overflowed, in f64
// (exact deviations, no overflow below 1e308); see the top of this file.
template <class F, class T>
void layer_norm_moments_f64(const T *x, int64_t n, float eps, float &mean, float &rstd) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  double s = 0, s2 = 0;
  for (int64_t j = 0; j < n; ++j) s += double(float(x[j]));
  const double mu = s / double(n);
  for (int64_t j = 0; j < n; ++j) {
    const double d = double(float(x[j])) - mu;
    s2 += d * d;
  }
  const double var = s2 / double(n);
  const bool range_overflows = std::isinf(max<F>(x, n) + max_negated<F>(x, n));
  mean = range_overflows ? kNaN : float(mu);
  // A range that overflows makes PyTorch's mean NaN, and so its rstd, in 2.x too.
  const float overflowed =
      !range_overflows && ops::variance_overflow() == ops::VarianceOverflow::zero_rstd ? 0.0f : kNaN;
  rstd = var > double(std::numeric_limits<float>::max()) ? overflowed : 1.0f / std::sqrt(float(var) + eps);
}

template <class F, class T, class P>
void layer_norm_row(const T *x, const P *gamma, const P *beta, T *y, float *mean_out, float *rstd_out, int64_t n,
                    float eps) {
  using V = typename F::V;
  // Masked loads are zero past the row: the tail adds nothing.
  const V inv_n = F::set1(1.0f / float(n));
  const float m0 = sum<F>(n, [&](int64_t j, auto part) { return F::mul(load<F>(x + j, part), inv_n); });
  const V vm0 = F::set1(m0);
  float s1, s2;
  sum2<F>(n, s1, s2, [&](int64_t j, auto part, V &a, V &b) {
    const V d = keep<F>(F::sub(load<F>(x + j, part), vm0), part, 0.0f);
    a = F::add(a, d);
    b = F::fmadd(d, d, b);
  });
  const float dm = s1 / float(n);
  float var = s2 / float(n) - dm * dm;
  if (var < 0) var = 0;  // rounding; keeps a NaN
  float rstd = 1.0f / std::sqrt(var + eps);
  float mean = m0 + dm;
  // A finite m0 is a finite row (an Inf or NaN element makes it Inf or NaN);
  // its var is then Inf, or NaN from Inf - Inf where dm^2 overflowed too.
  if (!std::isfinite(var) && std::isfinite(m0)) layer_norm_moments_f64<F>(x, n, eps, mean, rstd);
  *mean_out = mean;
  *rstd_out = rstd;
  const V vm = F::set1(mean), vr = F::set1(rstd);
  if (gamma && beta) {
    each<F>(n, [&](int64_t j, auto part) {
      const V xh = F::mul(F::sub(load<F>(x + j, part), vm), vr);
      store<F>(y + j, F::fmadd(xh, load<F>(gamma + j, part), load<F>(beta + j, part)), part);
    });
  } else if (gamma) {
    each<F>(n, [&](int64_t j, auto part) {
      store<F>(y + j, F::mul(F::mul(F::sub(load<F>(x + j, part), vm), vr), load<F>(gamma + j, part)), part);
    });
  } else if (beta) {
    each<F>(n, [&](int64_t j, auto part) {
      store<F>(y + j, F::fmadd(F::sub(load<F>(x + j, part), vm), vr, load<F>(beta + j, part)), part);
    });
  } else {
    each<F>(n, [&](int64_t j, auto part) { store<F>(y + j, F::mul(F::sub(load<F>(x + j, part), vm), vr), part); });
  }
}

// One row's dx (when dx is not null) and its parameter gradients (each when
// not null); kGamma: gamma is not null. The first pass only reads (the two
// sums); dx and the gradients are written in the second. A store in a
// sum's term would be a may_alias vector store inside the sum's out-of-line
// leaf, through a pointer read from its closure: GCC then reloaded every
// captured value, through two indirections, for every vector (AVX2, DiT's
// rows: the first pass took three times the second).
template <class F, bool kGamma, class T, class P>
void layer_norm_backward_row(const T *dy, const T *x, float mean, float rstd, const P *gamma, T *dx, float *dgamma,
                             float *dbeta, int64_t n) {
  using V = typename F::V;
  const V vm = F::set1(mean), vr = F::set1(rstd);
  // dy, g * dy and xhat of one vector. Past the row dy (masked load) and so
  // g * dy are zero: the tail adds nothing to the sums.
  auto terms = [&](int64_t j, auto part, V &d, V &gdy, V &xh) {
    d = load<F>(dy + j, part);
    xh = F::mul(F::sub(load<F>(x + j, part), vm), vr);
    if constexpr (kGamma) gdy = vmath::rounded(F::mul(load<F>(gamma + j, part), d));
    else gdy = d;
  };
  V va = F::zero(), vb = F::zero();
  if (dx) {
    float sg, sgx;  // sum(g * dy), sum(g * dy * xhat)
    sum2<F>(n, sg, sgx, [&](int64_t j, auto part, V &a, V &b) {
      V d, gdy, xh;
      terms(j, part, d, gdy, xh);
      a = F::add(a, gdy);
      b = F::fmadd(gdy, xh, b);
    });
    va = F::set1(sg / float(n));
    vb = F::set1(sgx / float(n));
  } else if (!dgamma && !dbeta) {
    return;
  }
  each<F>(n, [&](int64_t j, auto part) {
    V d, gdy, xh;
    terms(j, part, d, gdy, xh);
    if (dx) store<F>(dx + j, F::mul(vr, F::fnmadd(xh, vb, F::sub(gdy, va))), part);
    if (dgamma) store<F>(dgamma + j, F::fmadd(d, xh, load<F>(dgamma + j, part)), part);
    if (dbeta) store<F>(dbeta + j, F::add(load<F>(dbeta + j, part), d), part);
  });
}

// The API's calls (ops/layer_norm.h), row by row. cols == 0: every row's
// mean 0 and rstd NaN, as PyTorch's native_layer_norm; nothing else.
template <class F, class T, class P>
void layer_norm_forward_rows(const T *x, const P *gamma, const P *beta, T *y, float *mean, float *rstd, int64_t rows,
                             int64_t cols, float eps) {
  for (int64_t i = 0; i < rows; ++i) {
    if (cols <= 0) {
      mean[i] = 0;
      rstd[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    layer_norm_row<F>(x + i * cols, gamma, beta, y + i * cols, mean + i, rstd + i, cols, eps);
  }
}

template <class F, bool kGamma, class T, class P>
void layer_norm_backward_rows(const T *dy, const T *x, const float *mean, const float *rstd, const P *gamma, T *dx,
                              float *dgamma, float *dbeta, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t o = i * cols;
    layer_norm_backward_row<F, kGamma>(dy + o, x + o, mean[i], rstd[i], gamma, dx ? dx + o : nullptr, dgamma, dbeta,
                                       cols);
  }
}

// x with its rows and columns swapped (ld_x > 0: element j of row i at
// x[i + j * ld_x]): bands of kSwappedBand rows copied transposed
// (ops/transpose_impl.h) into a buffer of band x cols elements, then the
// rows' loop on it. The rows' arithmetic is the same, and the parameter
// gradients are still added in row order: the same bits as a contiguous x.
// The band is the transposing copy's (kTransposeTile, which its prefetch
// assumes): 128 bytes of each f32 column (64 of bf16); the buffer, 48 KiB
// for DiT-S/2's 384 f32 columns, is in L2 and each row's 1.5 KiB in L1
// while the rows' loop reads it three times.
constexpr int64_t kSwappedBand = kTransposeTile;

// The calling thread's buffer of at least n elements, kept for its next
// call: a call per unit of work, and at DiT-XL/2's 1152 f32 columns the
// buffer (144 KiB) is above glibc's mmap threshold, which would otherwise
// map and unmap it on every call. Freed when the thread ends.
template <class F, class T>
T *swapped_buffer(size_t n) {
  static thread_local std::unique_ptr<T[]> buf;
  static thread_local size_t size = 0;
  if (size < n) {
    buf.reset();
    buf.reset(new T[n]);
    size = n;
  }
  return buf.get();
}

template <class F, class T, class Fn>
void swapped_bands(const T *x, int64_t ld_x, int64_t rows, int64_t cols, const Fn &band_fn) {
  T *buf = swapped_buffer<F, T>(size_t(std::min(rows, kSwappedBand) * cols));
  for (int64_t i0 = 0; i0 < rows; i0 += kSwappedBand) {
    const int64_t n = std::min(kSwappedBand, rows - i0);
    transposing::transpose_copy<F>(x + i0, ld_x, buf, cols, n, cols);
    band_fn(static_cast<const T *>(buf), i0, n);
  }
}

template <class F, class T, class P>
void layer_norm_forward(const T *x, int64_t ld_x, const P *gamma, const P *beta, T *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  if (ld_x <= 0 || cols <= 0 || rows <= 0)
    return layer_norm_forward_rows<F>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
  swapped_bands<F>(x, ld_x, rows, cols, [&](const T *band, int64_t i0, int64_t n) {
    layer_norm_forward_rows<F>(band, gamma, beta, y + i0 * cols, mean + i0, rstd + i0, n, cols, eps);
  });
}

template <class F, class T, class P>
void layer_norm_backward(const T *dy, const T *x, int64_t ld_x, const float *mean, const float *rstd, const P *gamma,
                         T *dx, float *dgamma, float *dbeta, int64_t rows, int64_t cols) {
  if (cols <= 0 || rows <= 0) return;
  auto rows_fn = [&](const T *xr, int64_t i0, int64_t n) {
    T *dxr = dx ? dx + i0 * cols : nullptr;
    if (gamma)
      layer_norm_backward_rows<F, true>(dy + i0 * cols, xr, mean + i0, rstd + i0, gamma, dxr, dgamma, dbeta, n, cols);
    else
      layer_norm_backward_rows<F, false>(dy + i0 * cols, xr, mean + i0, rstd + i0, gamma, dxr, dgamma, dbeta, n, cols);
  };
  if (ld_x <= 0) return rows_fn(x, 0, rows);
  swapped_bands<F>(x, ld_x, rows, cols, rows_fn);
}

}  // namespace hcops::ops::rows
