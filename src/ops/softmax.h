// Softmax and LogSoftmax over the last dimension, forward and backward, f32
// and bf16 data with f32 arithmetic. Each call is serial over `rows` rows
// of `cols` elements: the framework layer splits the rows across its own
// threads. PyTorch's operators take contiguous rows (row i at x + i * cols);
// attention's take rows ld >= cols elements apart in each of their row
// arrays (x, y, p, p16, dy, dx, a, b: its blocks' rows are padded) and leave
// the padding alone; their per-row values (lse, ld_lse apart; sums, out)
// are one a row.
#pragma once

#include "common/api.h"
#include <cmath>
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// y = softmax(x) (log = false) or log_softmax(x) (log = true), row by row.
void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, bool log);
void softmax_forward(const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log);
// Softmax rows and their logsumexp, max + log(sum exp(x - max)), into
// lse[i * ld_lse] (NaN where the row's softmax is NaN), as attention needs;
// of fl(scale x) for a positive finite scale (attention's scaled scores,
// scaled as they are read: the same values as scaling x first; a negative
// or infinite scale is the caller's to apply first). y f32 (it may be x:
// attention's P over its scores), or bf16 rounded once in the store (bf16
// attention's P, the operand of O = P V).
void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse,
                     float scale = 1.0f);
void softmax_forward(const float *x, bf16 *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse,
                     float scale = 1.0f);
// The softmax of each row of fl(scale x) again from its logsumexp
// (attention's backward): p = exp(fl(scale x) - lse[i * ld_lse]), divided
// by the row's sum when lse_is_rows(that sum) (lse's rounding scales a
// whole row; the division takes it out), else as computed (an lse that is
// not the row's own); with p16 (else null), also rounded to bf16; with
// sums (else null), each row's sum before the division. p may be x.
void softmax_from_lse(const float *x, float scale, const float *lse, int64_t ld_lse, float *p, bf16 *p16,
                      float *sums, int64_t rows, int64_t cols, int64_t ld);
// Whether a row from softmax_from_lse with this sum came from its own
// logsumexp: 1 within 2^-10 (|lse| up to 2^13 rounds by less). False for NaN.
inline bool lse_is_rows(float row_sum) { return std::fabs(row_sum - 1.0f) <= 0x1p-10f; }
// out[i] = sum_j a[i, j] b[i, j] of rows of cols floats, in f32.
void row_dots(const float *a, const float *b, float *out, int64_t rows, int64_t cols, int64_t ld);

// From the forward's output y, as PyTorch's _softmax_backward_data and
// _log_softmax_backward_data: softmax dx = y * (dy - sum(dy * y));
// log_softmax dx = dy - exp(y) * sum(dy).
void softmax_backward(const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log);
void softmax_backward(const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log);
// Softmax's backward with each row's sum(dy * y) given: dx = y * (dy -
// sums[i]) (attention's dS = P (dP - D), D = rowsum(dO * O) from the
// forward's output, as PyTorch's kernel takes it); f32 dx (it may be dy:
// attention's dS over dP), or bf16 rounded once in the store (bf16
// attention's dS, the operand of dQ and dK).
void softmax_backward(const float *dy, const float *y, const float *sums, float *dx, int64_t rows, int64_t cols,
                      int64_t ld);
void softmax_backward(const float *dy, const float *y, const float *sums, bf16 *dx, int64_t rows, int64_t cols,
                      int64_t ld);

}  // namespace hcops::ops
HCOPS_API_END
