// Vector loops over one row of the row operators (softmax, layer_norm),
// written against a family's vector traits F (kernels/<family>/vec.h): full
// vectors, then one masked tail, so a row of any length runs vectorized; f32
// and bf16 data (widened on load, rounded to nearest even on store). Every
// pass re-reads the row from L1 (or L2), where the previous pass left it.
//
// Sums are blocked and pairwise: a block of up to kSumVectors vectors goes
// into four vector accumulators (so the adds of consecutive vectors do not
// wait on each other), and blocks combine in a binary tree. Each f32 lane of
// the result is then the sum of at most kSumVectors / 4 terms in sequence,
// two adds across the accumulators, ceil(log2(blocks)) tree levels and
// log2(lanes) adds across the lanes, so the rounding error is at most about
//   (kSumVectors / 4 + 2 + log2(n / (kSumVectors * lanes)) + log2(lanes)) u * sum |term_i|
// with u = 2^-24: 40 u for a DiT row and 50 u at n = 9.4 M (AVX-512), where
// one accumulator per lane running along the row (n / (4 lanes) terms)
// allowed 147,000 u and measured 1.4e-5 relative in LayerNorm's variance.
// A row of up to one block (2048 f32 elements with AVX-512, 1024 with AVX2,
// 512 with SSE2) is one block: the tree costs nothing there. The order of
// the additions depends on n alone, never on the data or the thread.
#pragma once

#include <cstdint>
#include <limits>

#include "common/dtype.h"

namespace hcops::ops::rows {

// Which part of a row a loop body is on: a full vector, or the tail of
// `count` < lanes elements. The tail's Cmp is the lanes that hold elements,
// for blending out what its masked loads (zeros) would contribute.
struct Full {};
template <class F>
struct Tail {
  typename F::Mask m;
  typename F::Cmp valid;
  explicit Tail(int count) : m(F::mask(count)), valid(F::lt(lane_index(), F::set1(float(count)))) {}
  static typename F::V lane_index() {
    static const float iota[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,  // 64: SVE's
                                 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,  // 2048 bits
                                 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
                                 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
    static_assert(F::lanes <= 64, "iota too short");
    return F::loadu(iota);
  }
};

template <class F>
inline typename F::V load(const float *p, Full) {
  return F::loadu(p);
}
template <class F>
inline typename F::V load(const float *p, const Tail<F> &t) {
  return F::loadu(p, t.m);
}
template <class F>
inline typename F::V load(const bf16 *p, Full) {
  return F::load_bf16(reinterpret_cast<const uint16_t *>(p));
}
template <class F>
inline typename F::V load(const bf16 *p, const Tail<F> &t) {
  return F::load_bf16(reinterpret_cast<const uint16_t *>(p), t.m);
}
template <class F>
inline void store(float *p, typename F::V v, Full) {
  F::storeu(p, v);
}
template <class F>
inline void store(float *p, typename F::V v, const Tail<F> &t) {
  F::storeu(p, v, t.m);
}
template <class F>
inline void store(bf16 *p, typename F::V v, Full) {
  F::store_bf16(reinterpret_cast<uint16_t *>(p), v);
}
template <class F>
inline void store(bf16 *p, typename F::V v, const Tail<F> &t) {
  F::store_bf16(reinterpret_cast<uint16_t *>(p), v, t.m);
}

// v on the lanes that hold elements, `fill` on the others (full: v).
template <class F>
inline typename F::V keep(typename F::V v, Full, float) {
  return v;
}
template <class F>
inline typename F::V keep(typename F::V v, const Tail<F> &t, float fill) {
  return F::select(t.valid, v, F::set1(fill));
}

// body(j, part) for every vector of a row of n elements, j its first index.
template <class F, class Body>
__attribute__((always_inline)) inline void each(int64_t n, Body &&body) {
  int64_t j = 0;
  for (; j + F::lanes <= n; j += F::lanes) body(j, Full{});
  if (j < n) body(j, Tail<F>(int(n - j)));
}

// Vectors per block of a sum (see the top of this file): 32 terms per
// accumulator lane.
constexpr int64_t kSumVectors = 128;

// local_term: the loops below call a copy of the term, local to the loop.
// A sum's leaf is out of line (pairwise() calls it too) and reaches the
// term through a pointer; a term that stores (softmax keeps exp(x - max) as
// it sums) does so with a may_alias vector store through a pointer read from
// that closure, which for GCC may overwrite the closure, so it reloaded every
// capture (through two indirections for captures by reference) for every
// vector. The local copy's fields cannot be written that way; a term that
// stores captures by value, so the copy holds the values themselves.

// The lane-wise combination op(acc, term(j, part)) over [j, end), in four
// accumulators (vector k of each group of four into accumulator k), then
// across them: the same order for a given range whatever the data. term must
// return `neutral` on a tail's empty lanes (keep()). Only the range that
// ends the row may have a tail.
template <class F, class Op, class Term>
__attribute__((always_inline)) inline typename F::V reduce_range(int64_t j, int64_t end, float neutral, Op op,
                                                                   Term &&term) {
  using V = typename F::V;
  constexpr int64_t L = F::lanes;
  const auto t = term;  // (see local_term)
  V a0 = F::set1(neutral), a1 = a0, a2 = a0, a3 = a0;
  for (; j + 4 * L <= end; j += 4 * L) {
    a0 = op(a0, t(j, Full{}));
    a1 = op(a1, t(j + L, Full{}));
    a2 = op(a2, t(j + 2 * L, Full{}));
    a3 = op(a3, t(j + 3 * L, Full{}));
  }
  for (; j + L <= end; j += L) a0 = op(a0, t(j, Full{}));
  if (j < end) a1 = op(a1, t(j, Tail<F>(int(end - j))));
  return op(op(a0, a1), op(a2, a3));
}

// The whole row in one range: for maxima, whose result is exact in any order.
template <class F, class Op, class Term>
__attribute__((always_inline)) inline typename F::V reduce(int64_t n, float neutral, Op op, Term &&term) {
  return reduce_range<F>(0, n, neutral, op, term);
}

// leaf(j, end) over blocks of at most kSumVectors vectors, combined by
// add() in a binary tree; every split falls on a multiple of four vectors,
// so only the last block holds the row's tail.
template <class F, class Leaf, class Add>
auto pairwise(int64_t j, int64_t end, Leaf &leaf, Add &add) -> decltype(leaf(j, end)) {
  constexpr int64_t kBlock = kSumVectors * F::lanes, kStep = 4 * F::lanes;
  if (end - j <= kBlock) return leaf(j, end);
  const int64_t mid = j + (end - j) / 2 / kStep * kStep;
  return add(pairwise<F>(j, mid, leaf, add), pairwise<F>(mid, end, leaf, add));
}

// The sum of term(j, part) over a row (term returns zeros on a tail's empty
// lanes).
template <class F, class Term>
__attribute__((always_inline)) inline float sum(int64_t n, Term &&term) {
  using V = typename F::V;
  auto add = [](V a, V b) { return F::add(a, b); };
  auto leaf = [&](int64_t j, int64_t end) { return reduce_range<F>(j, end, 0.0f, add, term); };
  if (n <= kSumVectors * F::lanes) return F::reduce_add(leaf(0, n));
  return F::reduce_add(pairwise<F>(0, n, leaf, add));
}

// Two sums in one pass: term(j, part, s0, s1) adds its terms into s0 and s1.
template <class F, class Term>
__attribute__((always_inline)) inline void sum2(int64_t n, float &out0, float &out1, Term &&term) {
  using V = typename F::V;
  struct Pair {  // (not std::pair, whose template arguments drop the vector types' attributes)
    V first, second;
  };
  constexpr int64_t L = F::lanes;
  auto leaf = [&](int64_t j, int64_t end) {
    const auto t = term;  // (see local_term)
    V a0 = F::zero(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (; j + 4 * L <= end; j += 4 * L) {
      t(j, Full{}, a0, b0);
      t(j + L, Full{}, a1, b1);
      t(j + 2 * L, Full{}, a2, b2);
      t(j + 3 * L, Full{}, a3, b3);
    }
    for (; j + L <= end; j += L) t(j, Full{}, a0, b0);
    if (j < end) t(j, Tail<F>(int(end - j)), a1, b1);
    return Pair{F::add(F::add(a0, a1), F::add(a2, a3)), F::add(F::add(b0, b1), F::add(b2, b3))};
  };
  auto add = [](Pair x, Pair y) { return Pair{F::add(x.first, y.first), F::add(x.second, y.second)}; };
  const Pair s = n <= kSumVectors * L ? leaf(0, n) : pairwise<F>(0, n, leaf, add);
  out0 = F::reduce_add(s.first);
  out1 = F::reduce_add(s.second);
}

// The row's maximum; NaN elements are skipped (maxps keeps its second
// operand), the callers' later sums carry them into the result.
template <class F, class T>
inline float max(const T *x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const auto v = reduce<F>(
      n, kNegInf, [](typename F::V acc, typename F::V v) { return F::max(v, acc); },
      [&](int64_t j, auto part) { return keep<F>(load<F>(x + j, part), part, kNegInf); });
  return F::reduce_max(v);
}

// -min(row), the maximum of the negated elements; NaN skipped as in max().
template <class F, class T>
inline float max_negated(const T *x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const auto v = reduce<F>(
      n, kNegInf, [](typename F::V acc, typename F::V v) { return F::max(v, acc); },
      [&](int64_t j, auto part) { return keep<F>(F::sub(F::zero(), load<F>(x + j, part)), part, kNegInf); });
  return F::reduce_max(v);
}

}  // namespace hcops::ops::rows
