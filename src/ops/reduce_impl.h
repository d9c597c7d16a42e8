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

template <class F, class T, class To>
void block_sums(const T *x, int64_t rows, int64_t ld, int64_t cols, To *out) {
  constexpr int L = F::lanes;
  alignas(64) float total[kBlockCols], comp[kBlockCols];
  const int64_t vecs = (cols + L - 1) / L;
  const typename F::Mask tail = F::mask(static_cast<int>(cols - (vecs - 1) * L));
  for (int64_t v = 0; v < vecs; ++v) {
    F::storeu(total + v * L, F::zero());
    F::storeu(comp + v * L, F::zero());
  }
  for (int64_t r = 0; r < rows; r += kRowsAtOnce) {
    const int n = static_cast<int>(rows - r < kRowsAtOnce ? rows - r : kRowsAtOnce);
    const T *xr = x + r * ld;
    for (int64_t v = 0; v < vecs; ++v) {
      const bool full = v + 1 < vecs || cols % L == 0;
      V<F> t = F::loadu(total + v * L), c = F::loadu(comp + v * L);
      fold<F>(t, c, n == kRowsAtOnce ? rows_sum<F>(xr + v * L, ld, kRowsAtOnce, tail, full)
                                     : rows_sum<F>(xr + v * L, ld, n, tail, full));
      F::storeu(total + v * L, t);
      F::storeu(comp + v * L, c);
    }
  }
  for (int64_t v = 0; v < vecs; ++v) {
    const V<F> t = F::loadu(total + v * L);
    V<F> s = F::add(t, F::loadu(comp + v * L));
    // A total gone infinite makes its compensation NaN (inf - inf): the sum
    // is then the total itself (an infinity, or NaN from opposite ones).
    s = F::select(F::isnan(s), t, s);
    if (v + 1 < vecs || cols % L == 0) store<F>(out + v * L, s);
    else store<F>(out + v * L, s, tail);
  }
}

template <class F, class T, class To>
void column_sums_typed(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1) {
  const T *x = static_cast<const T *>(s.x) + o * s.ld_outer;
  To *out = static_cast<To *>(s.out) + o * s.cols;
  for (int64_t c = c0; c < c1; c += kBlockCols)
    block_sums<F>(x + c, s.rows, s.ld, (c1 - c < kBlockCols ? c1 - c : kBlockCols), out + c);
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
