// Vector loops over one row of the row operators (softmax, layer_norm),
// written against a family's vector traits F (kernels/<family>/vec.h): full
// vectors, then one masked tail, so a row of any length runs vectorized; f32
// and bf16 data (widened on load, rounded to nearest even on store); sums
// and maxima with four accumulators, so the adds of consecutive vectors do
// not wait on each other. Every pass re-reads the row from L1, where the
// previous pass left it.
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
    static const float iota[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    static_assert(F::lanes <= 16, "iota too short");
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

// The lane-wise combination op(acc, term(j, part)) over a row, in four
// accumulators (vector k of each group of four into accumulator k), then
// across them: the same order for a given n whatever the data. term must
// return `neutral` on a tail's empty lanes (keep()).
template <class F, class Op, class Term>
__attribute__((always_inline)) inline typename F::V reduce(int64_t n, float neutral, Op op, Term &&term) {
  using V = typename F::V;
  constexpr int64_t L = F::lanes;
  V a0 = F::set1(neutral), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 4 * L <= n; j += 4 * L) {
    a0 = op(a0, term(j, Full{}));
    a1 = op(a1, term(j + L, Full{}));
    a2 = op(a2, term(j + 2 * L, Full{}));
    a3 = op(a3, term(j + 3 * L, Full{}));
  }
  for (; j + L <= n; j += L) a0 = op(a0, term(j, Full{}));
  if (j < n) a1 = op(a1, term(j, Tail<F>(int(n - j))));
  return op(op(a0, a1), op(a2, a3));
}

template <class F, class Term>
__attribute__((always_inline)) inline float sum(int64_t n, Term &&term) {
  return F::reduce_add(reduce<F>(
      n, 0.0f, [](typename F::V a, typename F::V b) { return F::add(a, b); }, term));
}

// Two sums in one pass: term(j, part, s0, s1) adds its terms into s0 and s1.
template <class F, class Term>
__attribute__((always_inline)) inline void sum2(int64_t n, float &out0, float &out1, Term &&term) {
  using V = typename F::V;
  constexpr int64_t L = F::lanes;
  V a0 = F::zero(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  int64_t j = 0;
  for (; j + 4 * L <= n; j += 4 * L) {
    term(j, Full{}, a0, b0);
    term(j + L, Full{}, a1, b1);
    term(j + 2 * L, Full{}, a2, b2);
    term(j + 3 * L, Full{}, a3, b3);
  }
  for (; j + L <= n; j += L) term(j, Full{}, a0, b0);
  if (j < n) term(j, Tail<F>(int(n - j)), a1, b1);
  out0 = F::reduce_add(F::add(F::add(a0, a1), F::add(a2, a3)));
  out1 = F::reduce_add(F::add(F::add(b0, b1), F::add(b2, b3)));
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

// Prefetches the n elements at p (a row a few rows ahead of the one being
// computed): a row's passes wait on its reductions, so the loads of the
// next rows would otherwise start late, one row's latency at a time.
template <class T>
inline void prefetch(const T *p, int64_t n, bool write = false) {
  const char *c = reinterpret_cast<const char *>(p);
  const int64_t bytes = n * int64_t(sizeof(T));
  if (write) {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 1, 3);
  } else {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, 0, 3);
  }
}

// How many rows ahead to prefetch: about 4 KiB ahead, at least one row.
inline int64_t prefetch_rows(int64_t cols, size_t elem) {
  const int64_t bytes = cols * int64_t(elem);
  return bytes >= 4096 ? 1 : 4096 / bytes;
}

}  // namespace hcops::ops::rows
