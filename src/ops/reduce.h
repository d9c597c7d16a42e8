// Sums down the columns of a row-major block: out[o][c] = sum over r of
// x[o][r][c], f32 or bf16 data with f32 arithmetic. PyTorch's sum over a run
// of dimensions in front of the last ones, as autograd's sum_to issues it for
// broadcast operands: a Linear's bias gradient (dY (T, C) summed over T) and
// adaLN's modulation gradients ((B, T, C) summed over T into (B, 1, C)).
//
// Accuracy: a column is summed 16 rows at a time in f32 and each such
// partial sum added into the column's running total with Neumaier's
// compensated summation, so the error is at most about (16 + 2) u sum |x| (u = 2^-24),
// whatever the number of rows, before the one rounding into out (a bf16
// out is rounded once, to nearest even). Rows summed in blocks
// (column_partial_sums) keep that bound: each block's total and
// compensation are folded into the result in block order as one more part,
// the compensations added. NaN and infinities come out as in the plain
// sum. The result of a column does not depend on how the columns are split
// across threads, nor on which thread summed a block.
#pragma once

#include "common/api.h"
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

struct ColumnSums {
  Dtype x_type, out_type;  // f32 or bf16
  const void *x;
  void *out;                       // dense: outer x cols
  int64_t rows, cols;              // of each outer slice
  int64_t ld;                      // elements between x's rows (>= cols)
  int64_t ld_outer;                // elements between x's outer slices
};

// Columns [c0, c1) of outer slice o (serial: the framework layer splits
// slices and columns across its threads).
void column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1);

// The same sums with the rows in blocks, for a caller that splits a slice's
// rows across threads (each then reads the rows the operator before left
// in its own cache): rows [r0, r1) of columns [c0, c1) of slice o into
// the block's f32 running totals and compensations, total[c] and comp[c]
// for column c (s.out untouched); then out's columns [c0, c1) of slice o
// from `blocks` such blocks, block b's at total + b * s.cols and comp +
// b * s.cols, folded in block order. The bits depend on the blocks'
// boundaries alone.
void column_partial_sums(const ColumnSums &s, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                         float *total, float *comp);
void combine_column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1, const float *total,
                         const float *comp, int64_t blocks);

}  // namespace hcops::ops
HCOPS_API_END
