// The LayerNorm kernels on the avx2 family's vector traits
// (ops/layer_norm_impl.h), compiled with its -m flags.
#include "kernels/avx2/vec.h"
#include "ops/layer_norm_families.h"
#include "ops/layer_norm_impl.h"

namespace hcops::ops::avx2 {

using F = kernels::avx2::F32;

void layer_norm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  rows::layer_norm_forward<F>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  rows::layer_norm_forward<F>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  rows::layer_norm_forward<F>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_backward(const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma,
                         float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  rows::layer_norm_backward<F>(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  rows::layer_norm_backward<F>(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const float *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  rows::layer_norm_backward<F>(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}

}  // namespace hcops::ops::avx2
