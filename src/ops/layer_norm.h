// LayerNorm over the last `cols` elements, forward and backward, f32 and
// bf16 data with f32 arithmetic; the affine parameters (gamma, beta) are of
// the data's type or f32 (bf16 activations with f32 parameters, as under
// autocast), or absent (null). Each call is serial over `rows` contiguous
// rows (row i at x + i * cols): the framework layer splits the rows across
// its own threads and reduces the parameter gradients.
#pragma once

#include "common/api.h"
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// The rstd of a finite row whose variance exceeds FLT_MAX (|x| ~ 2e19):
// NaN, as PyTorch 1.13 (the default), or 0, as PyTorch 2.x (whose f32 sums
// overflow to Inf there: y = beta, no gradient). Process-wide, set once by
// the framework layer when it loads.
enum class VarianceOverflow : int { nan_rstd, zero_rstd };
void set_variance_overflow(VarianceOverflow v);
VarianceOverflow variance_overflow();

// y = (x - mean) * rstd * gamma + beta per row, with mean and
// rstd = 1 / sqrt(biased variance + eps) saved per row (as PyTorch's
// native_layer_norm saves them; f32 here, the caller converts).
void layer_norm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps);
void layer_norm_forward(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps);
void layer_norm_forward(const bf16 *x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps);

// From the forward's saved mean and rstd: dx for each row (skipped when dx is
// null), and this call's rows' contributions added into dgamma_acc and
// dbeta_acc (`cols` f32 each; skipped when null):
//   dgamma_acc[j] += sum_i dy[i][j] * (x[i][j] - mean[i]) * rstd[i]
//   dbeta_acc[j]  += sum_i dy[i][j]
void layer_norm_backward(const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma,
                         float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const float *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);

// The same with x's rows and columns swapped: element j of row i at
// x[i + j * ld_x] (ld_x >= rows), as a band of rows of a tensor whose last
// two dimensions are swapped from a contiguous one holds them (DiT's
// residual stream under PyTorch 2.x). y, dy and dx are contiguous rows as
// above. The rows are copied transposed, a band at a time, into a buffer
// of the call's own and computed there: the same bits as on a contiguous
// copy of x, without that copy's pass through memory.
void layer_norm_forward_swapped(const float *x, int64_t ld_x, const float *gamma, const float *beta, float *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps);
void layer_norm_forward_swapped(const bf16 *x, int64_t ld_x, const bf16 *gamma, const bf16 *beta, bf16 *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps);
void layer_norm_forward_swapped(const bf16 *x, int64_t ld_x, const float *gamma, const float *beta, bf16 *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps);
void layer_norm_backward_swapped(const float *dy, const float *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const float *gamma, float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols);
void layer_norm_backward_swapped(const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const bf16 *gamma, bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols);
void layer_norm_backward_swapped(const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const float *gamma, bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols);

}  // namespace hcops::ops
HCOPS_API_END
