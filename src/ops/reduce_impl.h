// Column sums (ops/reduce.h), written once against a family's f32 vector
// traits `F` and instantiated by ops/family_table.cpp.
//
// The columns go in blocks of at most kBlockCols, whose running totals and
// compensations stay in two L1 arrays. Each pass reads kRowsAtOnce rows of
// the block, one contiguous run each (as many streams for the hardware
// prefetchers, each as long as the block is wide), adds them in registers
// and folds that partial sum into the totals. A (2048, 1536) bf16 dY
// summed over its rows from memory ran at 13.0 GB/s on one thread of a
// Zen 4, PyTorch's own kernel at 6.7 (doc/perf/torch2.md).
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "ops/eltwise_impl.h"
#include "ops/reduce.h"

namespace hcops::ops::reduce {

using eltwise::load;
using eltwise::store;
using eltwise::V;

constexpr int kRowsAtOnce = 16;
constexpr int64_t kBlockCols = 1024;

// total + part with Neumaier's compensation: the rounding error of each
// addition, kept in comp, is added back at the end.
template <class F>
HCOPS_VINLINE void fold(V<F> &total, V<F> &comp, V<F> part) {
  const V<F> t = F::add(total, part);
  const auto big = F::lt(F::abs(part), F::abs(total));  // |total| > |part|: total's low bits are lost
  const V<F> err = F::select(big, F::add(F::sub(total, t), part), F::add(F::sub(part, t), total));
  comp = F::add(comp, err);
  total = t;
}

// The sum of `rows` (<= kRowsAtOnce) rows of one vector of columns: even
// and odd rows in two chains, half as long.
template <class F, class T>
HCOPS_VINLINE V<F> rows_sum(const T *x, int64_t ld, int rows, typename F::Mask m, bool full) {
  auto row = [&](int r) __attribute__((always_inline)) { return full ? load<F>(x + r * ld) : load<F>(x + r * ld, m); };
  V<F> even = row(0), odd = rows > 1 ? row(1) : F::zero();
  for (int r = 2; r + 1 < rows; r += 2) {
    even = F::add(even, row(r));
    odd = F::add(odd, row(r + 1));
  }
  if (rows > 2 && rows % 2) even = F::add(even, row(rows - 1));
  return F::add(even, odd);
}

// The running totals and compensations of a block of at most kBlockCols
// columns, in L1 (whole vectors: the last one's lanes past the block are
// summed and never stored).
struct alignas(64) Sums {
  float total[kBlockCols], comp[kBlockCols];
};

template <class F>
void clear(Sums &a, int64_t cols) {
  for (int64_t v = 0; v < cols; v += F::lanes) {
    F::storeu(a.total + v, F::zero());
    F::storeu(a.comp + v, F::zero());
  }
}

// Rows [0, rows) of the block's columns added into a.
template <class F, class T>
void accumulate(const T *x, int64_t rows, int64_t ld, int64_t cols, Sums &a) {
  constexpr int L = F::lanes;
  const int64_t vecs = (cols + L - 1) / L;
  const typename F::Mask tail = F::mask(static_cast<int>(cols - (vecs - 1) * L));
  for (int64_t r = 0; r < rows; r += kRowsAtOnce) {
    const int n = static_cast<int>(rows - r < kRowsAtOnce ? rows - r : kRowsAtOnce);
    const T *xr = x + r * ld;
    for (int64_t v = 0; v < vecs; ++v) {
      const bool full = v + 1 < vecs || cols % L == 0;
      V<F> t = F::loadu(a.total + v * L), c = F::loadu(a.comp + v * L);
      fold<F>(t, c, n == kRowsAtOnce ? rows_sum<F>(xr + v * L, ld, kRowsAtOnce, tail, full)
                                     : rows_sum<F>(xr + v * L, ld, n, tail, full));
      F::storeu(a.total + v * L, t);
      F::storeu(a.comp + v * L, c);
    }
  }
}

// The block's sums into out[0, cols), rounded once.
template <class F, class To>
void finish(const Sums &a, int64_t cols, To *out) {
  constexpr int L = F::lanes;
  const int64_t vecs = (cols + L - 1) / L;
  const typename F::Mask tail = F::mask(static_cast<int>(cols - (vecs - 1) * L));
  for (int64_t v = 0; v < vecs; ++v) {
    const V<F> t = F::loadu(a.total + v * L);
    V<F> s = F::add(t, F::loadu(a.comp + v * L));
    // A total gone infinite makes its compensation NaN (inf - inf): the sum
    // is then the total itself (an infinity, or NaN from opposite ones).
    s = F::select(F::isnan(s), t, s);
    if (v + 1 < vecs || cols % L == 0) store<F>(out + v * L, s);
    else store<F>(out + v * L, s, tail);
  }
}

// The block's totals and compensations out to a caller's partial sums
// (total[0, cols), comp[0, cols)), and back: folded into the running ones
// as one more part (its compensation added to theirs).
template <class F>
void store_partial(const Sums &a, int64_t cols, float *total, float *comp) {
  constexpr int L = F::lanes;
  for (int64_t v = 0; v < cols; v += L) {
    if (cols - v >= L) {
      F::storeu(total + v, F::loadu(a.total + v));
      F::storeu(comp + v, F::loadu(a.comp + v));
    } else {
      const typename F::Mask m = F::mask(static_cast<int>(cols - v));
      F::storeu(total + v, F::loadu(a.total + v), m);
      F::storeu(comp + v, F::loadu(a.comp + v), m);
    }
  }
}

template <class F>
void fold_partial(Sums &a, int64_t cols, const float *total, const float *comp) {
  constexpr int L = F::lanes;
  for (int64_t v = 0; v < cols; v += L) {
    const bool full = cols - v >= L;
    const typename F::Mask m = F::mask(static_cast<int>(full ? L : cols - v));
    V<F> t = F::loadu(a.total + v), c = F::loadu(a.comp + v);
    fold<F>(t, c, full ? F::loadu(total + v) : F::loadu(total + v, m));
    c = F::add(c, full ? F::loadu(comp + v) : F::loadu(comp + v, m));
    F::storeu(a.total + v, t);
    F::storeu(a.comp + v, c);
  }
}

// body(a, c, n) for each block of columns [c, c + n) of [c0, c1), with the
// block's sums a cleared.
template <class F, class Body>
void for_each_block(int64_t c0, int64_t c1, const Body &body) {
  Sums a;
  for (int64_t c = c0; c < c1; c += kBlockCols) {
    const int64_t n = c1 - c < kBlockCols ? c1 - c : kBlockCols;
    clear<F>(a, n);
    body(a, c, n);
  }
}

template <class F, class T, class To>
void column_sums_typed(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1) {
  const T *x = static_cast<const T *>(s.x) + o * s.ld_outer;
  To *out = static_cast<To *>(s.out) + o * s.cols;
  for_each_block<F>(c0, c1, [&](Sums &a, int64_t c, int64_t n) {
    accumulate<F>(x + c, s.rows, s.ld, n, a);
    finish<F>(a, n, out + c);
  });
}

template <class F, class T>
void partial_sums_typed(const ColumnSums &s, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *total,
                        float *comp) {
  const T *x = static_cast<const T *>(s.x) + o * s.ld_outer + r0 * s.ld;
  for_each_block<F>(c0, c1, [&](Sums &a, int64_t c, int64_t n) {
    accumulate<F>(x + c, r1 - r0, s.ld, n, a);
    store_partial<F>(a, n, total + c, comp + c);
  });
}

template <class F, class To>
void combine_typed(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1, const float *total, const float *comp,
                   int64_t blocks) {
  To *out = static_cast<To *>(s.out) + o * s.cols;
  for_each_block<F>(c0, c1, [&](Sums &a, int64_t c, int64_t n) {
    for (int64_t b = 0; b < blocks; ++b) fold_partial<F>(a, n, total + b * s.cols + c, comp + b * s.cols + c);
    finish<F>(a, n, out + c);
  });
}

template <class F>
void column_partial_sums(const ColumnSums &s, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *total,
                         float *comp) {
  if (s.x_type == Dtype::bf16) partial_sums_typed<F, bf16>(s, o, r0, r1, c0, c1, total, comp);
  else partial_sums_typed<F, float>(s, o, r0, r1, c0, c1, total, comp);
}

template <class F>
void combine_column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1, const float *total,
                         const float *comp, int64_t blocks) {
  if (s.out_type == Dtype::bf16) combine_typed<F, bf16>(s, o, c0, c1, total, comp, blocks);
  else combine_typed<F, float>(s, o, c0, c1, total, comp, blocks);
}

template <class F>
void column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1) {
  const bool x16 = s.x_type == Dtype::bf16, o16 = s.out_type == Dtype::bf16;
  if (!x16 && !o16) column_sums_typed<F, float, float>(s, o, c0, c1);
  else if (!x16) column_sums_typed<F, float, bf16>(s, o, c0, c1);
  else if (!o16) column_sums_typed<F, bf16, float>(s, o, c0, c1);
  else column_sums_typed<F, bf16, bf16>(s, o, c0, c1);
}

}  // namespace hcops::ops::reduce
