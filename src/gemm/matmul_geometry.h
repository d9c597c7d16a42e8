// Strided, batched matrix products as the engine runs them. The ABI layers
// describe their operands as they hold them (a oneDNN memory descriptor, a
// PyTorch tensor: rows x cols with element strides, and batch dimensions,
// size 1 where an operand is broadcast); make_geometry turns C[b] = A[b] *
// B[b] into column-major gemm() calls: C row-major becomes C^T = B^T A^T,
// batches fold into the engine's M or N where their strides allow, and the
// rest is a loop (gemm/batched.h runs it). No operand is copied: a matrix
// with no unit stride, or with overlapping rows or columns, is declined.
#pragma once

#include "common/api.h"
#include "gemm/gemm.h"

namespace hcops {

// Batch dimensions an operand may have (oneDNN's DNNL_MAX_NDIMS is 12 in all;
// PyTorch's bmm has one).
constexpr int kMaxBatchDims = 12;

struct Matrix {
  long rows = 0, cols = 0, rs = 0, cs = 0;
  long offset = 0;  // elements from the data pointer to element (0, 0) of batch 0
  int nbatch = 0;
  long bdims[kMaxBatchDims] = {}, bstrides[kMaxBatchDims] = {};
};

// C = A * B as the engine runs it: column-major, per batch.
struct Geometry {
  Trans ta = Trans::N, tb = Trans::N;
  long m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
  long a_offset = 0, b_offset = 0, c_offset = 0;
  bool swapped = false;    // engine A is the caller's B (C row-major: C^T = B^T A^T)
  bool bias_rows = false;  // a bias runs along the caller's C rows (one per row), else its columns
  // The batches left after folding: the loop, with each operand's strides.
  int nbatch = 0;
  long bdims[kMaxBatchDims] = {};
  long a_bstride[kMaxBatchDims] = {}, b_bstride[kMaxBatchDims] = {}, c_bstride[kMaxBatchDims] = {};
  HCOPS_API long batches() const;
};

// Engine geometry for C[b] = A[b] * B[b] (A is M x K, B K x N, C M x N).
// `bias_rows` / `bias_cols`: a bias runs along C's rows / columns (keeps
// that dimension out of the batch fold). False when a matrix has no unit
// stride or overlapping rows/columns.
HCOPS_API bool make_geometry(const Matrix &a, const Matrix &b, const Matrix &c, bool bias_rows, bool bias_cols, Geometry *g);

}  // namespace hcops
