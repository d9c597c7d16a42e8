// Softmax and LogSoftmax over rows, forward and backward, on a family's
// vector traits F: the arithmetic of PyTorch 1.13's last-dimension kernels
// (aten/src/ATen/native/cpu/SoftMaxKernel.cpp) in f32, so results agree with
// them to rounding, including NaN and Inf: a row holding a NaN or a +Inf, or
// only -Inf, comes out all NaN (x - max is NaN somewhere, and the sum carries
// it to every element); -Inf elements beside a finite maximum give 0 (log:
// -Inf). Each row is read from memory once and written once; the passes
// between re-read it from L1. Input and output may be the same array.
// Instantiated per family by ops/family_table.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "ops/row_loops.h"
#include "ops/softmax.h"
#include "ops/vmath.h"

namespace hcops::ops::rows {

// A bf16 row's exp(x - max) wait here in f32 between the sum and the scaling
// (storing them in y would round them twice); longer rows compute them again.
constexpr int64_t kSoftmaxScratch = 8192;

// y = exp(x - max) * (1 / sum exp(x - max)), as PyTorch: one reciprocal per
// row; and max + log(sum) into *lse when asked. x and y of the same type, or
// f32 scores into bf16 probabilities (attention's, rounded once in the store).
// Scaled: the softmax of fl(scale x) for a scale > 0, each element scaled as
// it is read (attention's scores, whose product then needs no pass of its
// own to scale them); its maximum is fl(scale max(x)), the same value, as
// rounding is monotonic.
template <class F, bool Scaled = false, class Tx, class Ty>
void softmax_row(const Tx *x, Ty *y, int64_t n, float *scratch, float *lse = nullptr, float scale = 1.0f) {
  using V = typename F::V;
  const float row_max = Scaled ? vmath::rounded(scale * max<F>(x, n)) : max<F>(x, n);  // (not fused into lse's add)
  const V vmax = F::set1(row_max), vscale = F::set1(scale);
  // Captures by value: the sum's term stores (row_loops.h's local_term).
  auto shifted = [=](int64_t j, auto part) {
    V v = load<F>(x + j, part);
    if constexpr (Scaled) v = vmath::rounded(F::mul(v, vscale));  // fl(scale x), not fused into the subtraction
    return F::sub(v, vmax);
  };
  // Where exp(x - max) is kept for the scaling pass: y itself when it is f32.
  float *e = nullptr;
  if constexpr (std::is_same_v<Ty, float>) e = y;
  else if (n <= kSoftmaxScratch) e = scratch;
  const float s = sum<F>(n, [=](int64_t j, auto part) {
    const V v = vmath::exp_nonpositive<F>(shifted(j, part));
    if (e) store<F>(e + j, v, part);
    return keep<F>(v, part, 0.0f);
  });
  if (lse) *lse = row_max + std::log(s);
  const V inv = F::set1(1.0f / s);
  if (e) {
    each<F>(n, [&](int64_t j, auto part) { store<F>(y + j, F::mul(load<F>(e + j, part), inv), part); });
  } else {
    each<F>(n, [&](int64_t j, auto part) {
      store<F>(y + j, F::mul(vmath::exp_nonpositive<F>(shifted(j, part)), inv), part);
    });
  }
}

// y = (x - max) - log(sum exp(x - max)), in PyTorch's order.
template <class F, class T>
void log_softmax_row(const T *x, T *y, int64_t n) {
  using V = typename F::V;
  const V vmax = F::set1(max<F>(x, n));
  const float s = sum<F>(n, [&](int64_t j, auto part) {
    return keep<F>(vmath::exp_nonpositive<F>(F::sub(load<F>(x + j, part), vmax)), part, 0.0f);
  });
  const V lse = F::set1(std::log(s));
  each<F>(n, [&](int64_t j, auto part) { store<F>(y + j, F::sub(F::sub(load<F>(x + j, part), vmax), lse), part); });
}

// dx = y * (dy - sum(dy * y)); dx of dy's type, or f32 rounded to bf16 in
// the store (attention's dS, the operand of its next products).
template <class F, class T, class Tdx>
void softmax_backward_row(const T *dy, const T *y, Tdx *dx, int64_t n) {
  // Masked loads are zero past the row: the tail's products are zero.
  const auto s =
      F::set1(sum<F>(n, [&](int64_t j, auto part) { return F::mul(load<F>(dy + j, part), load<F>(y + j, part)); }));
  each<F>(n, [&](int64_t j, auto part) {
    store<F>(dx + j, F::mul(load<F>(y + j, part), F::sub(load<F>(dy + j, part), s)), part);
  });
}

// dx = dy - exp(y) * sum(dy).
template <class F, class T>
void log_softmax_backward_row(const T *dy, const T *y, T *dx, int64_t n) {
  const auto s = F::set1(sum<F>(n, [&](int64_t j, auto part) { return load<F>(dy + j, part); }));
  each<F>(n, [&](int64_t j, auto part) {
    store<F>(dx + j, F::fnmadd(vmath::exp<F>(load<F>(y + j, part)), s, load<F>(dy + j, part)), part);
  });
}

// The API's calls (ops/softmax.h), row by row.
template <class F, class T>
void softmax_forward(const T *x, T *y, int64_t rows, int64_t cols, bool log) {
  if (cols <= 0) return;
  if (log) {
    for (int64_t i = 0; i < rows; ++i) log_softmax_row<F>(x + i * cols, y + i * cols, cols);
    return;
  }
  alignas(64) float scratch[std::is_same_v<T, float> ? 1 : kSoftmaxScratch];
  for (int64_t i = 0; i < rows; ++i) softmax_row<F>(x + i * cols, y + i * cols, cols, scratch);
}

// Attention's row operators below take rows ld elements apart: its blocks'
// rows are padded so that they do not fall in one set of L1.
template <class F, class Ty>
void softmax_forward_lse(const float *x, Ty *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse,
                         float scale) {
  if (cols <= 0) return;
  alignas(64) float scratch[std::is_same_v<Ty, float> ? 1 : kSoftmaxScratch];
  for (int64_t i = 0; i < rows; ++i) {
    if (scale == 1.0f) softmax_row<F>(x + i * ld, y + i * ld, cols, scratch, lse + i * ld_lse);
    else softmax_row<F, true>(x + i * ld, y + i * ld, cols, scratch, lse + i * ld_lse, scale);
  }
}

// out[i] = sum_j a[i, j] b[i, j], in f32 (attention's D = rowsum(dP P)).
template <class F>
void row_dots(const float *a, const float *b, float *out, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) {
    const float *ai = a + i * ld, *bi = b + i * ld;
    out[i] = cols > 0 ? sum<F>(cols, [&](int64_t j, auto part) { return F::mul(load<F>(ai + j, part), load<F>(bi + j, part)); })
                      : 0.0f;
  }
}

// The softmax again from the forward's logsumexp: p = exp(fl(scale x) - lse)
// (attention's backward, as PyTorch's CPU kernel recomputes it), its sum
// kept on the way; with p16, the same values rounded to bf16 as well (the
// products' operand), in the second pass.
//
// Each row is divided by its own sum once computed, when that sum is 1 to
// the rounding of a logsumexp (within 2^-10: |lse| up to 2^13 rounds by
// less): a recomputed row is the forward's times exp(the logsumexp's
// rounding error) (2e-6 for |lse| ~ 40), the same factor for the whole row;
// attention's backward turned that into an absolute error of |sum(dP P)| x
// 2e-6 in dS (1e-4 relative in dQ and dK on PyTorch's OpInfo samples, whose
// scores reach 80, 15x PyTorch's error against f64). Any other sum (a
// logsumexp that is not the row's own, as a blockwise caller passes one for
// part of the keys; NaN, Inf) leaves the row exp(x - lse) as computed, as
// PyTorch's kernel takes it.
template <class F>
void softmax_from_lse(const float *x, float scale, const float *lse, int64_t ld_lse, float *p, bf16 *p16,
                      float *sums, int64_t rows, int64_t cols, int64_t ld) {
  const typename F::V vscale = F::set1(scale);
  for (int64_t i = 0; i < rows; ++i) {
    const float *xi = x + i * ld;
    float *pi = p + i * ld;
    const typename F::V l = F::set1(lse[i * ld_lse]);
    // Past the row the masked load gives 0 and exp(0 - lse) is not: keep()
    // leaves those lanes out of the sum.
    const float total = sum<F>(cols, [=](int64_t j, auto part) {  // (by value: row_loops.h's local_term)
      const auto v = vmath::exp_nonpositive<F>(F::sub(vmath::rounded(F::mul(load<F>(xi + j, part), vscale)), l));
      store<F>(pi + j, v, part);
      return keep<F>(v, part, 0.0f);
    });
    if (sums) sums[i] = total;
    const bool normalize = ops::lse_is_rows(total);
    const typename F::V inv = F::set1(normalize ? 1.0f / total : 1.0f);
    if (p16) {
      bf16 *qi = p16 + i * ld;
      each<F>(cols, [&](int64_t j, auto part) {
        const auto v = F::mul(load<F>(pi + j, part), inv);
        store<F>(pi + j, v, part);
        store<F>(qi + j, v, part);
      });
    } else if (normalize) {
      each<F>(cols, [&](int64_t j, auto part) { store<F>(pi + j, F::mul(load<F>(pi + j, part), inv), part); });
    }
  }
}

// dx = y * (dy - sums[i]) row by row, each row's sum(dy * y) given (for
// attention, rowsum(dO * O) from the forward's output); f32 dx, or rounded
// to bf16 in the store.
template <class F, class Tdx>
void softmax_backward_given(const float *dy, const float *y, const float *sums, Tdx *dx, int64_t rows,
                            int64_t cols, int64_t ld) {
  if (cols <= 0) return;
  for (int64_t i = 0; i < rows; ++i) {
    const float *dyi = dy + i * ld, *yi = y + i * ld;
    Tdx *dxi = dx + i * ld;
    const auto s = F::set1(sums[i]);
    each<F>(cols, [&](int64_t j, auto part) {
      store<F>(dxi + j, F::mul(load<F>(yi + j, part), F::sub(load<F>(dyi + j, part), s)), part);
    });
  }
}

template <class F, class T>
void softmax_backward(const T *dy, const T *y, T *dx, int64_t rows, int64_t cols, bool log) {
  if (cols <= 0) return;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t o = i * cols;
    if (log) log_softmax_backward_row<F>(dy + o, y + o, dx + o, cols);
    else softmax_backward_row<F>(dy + o, y + o, dx + o, cols);
  }
}

}  // namespace hcops::ops::rows
