// LayerNorm's entry points (ops/layer_norm.h), on the chosen family's table
// (ops/family.h: HCOPS_ISA and the CPU).
#include "ops/layer_norm.h"

#include <atomic>

#include "ops/family.h"

namespace hcops::ops {

namespace {

std::atomic<int> overflow{int(VarianceOverflow::nan_rstd)};

}  // namespace

void set_variance_overflow(VarianceOverflow v) { overflow.store(int(v), std::memory_order_relaxed); }
VarianceOverflow variance_overflow() { return VarianceOverflow(overflow.load(std::memory_order_relaxed)); }

void layer_norm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_f32(x, 0, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_bf16(x, 0, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_bf16_f32(x, 0, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_backward(const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma,
                         float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  ops_table().layer_norm_backward_f32(dy, x, 0, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  ops_table().layer_norm_backward_bf16(dy, x, 0, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const float *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  ops_table().layer_norm_backward_bf16_f32(dy, x, 0, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}

// x's rows swapped with its columns (ops/layer_norm.h).
void layer_norm_forward_swapped(const float *x, int64_t ld_x, const float *gamma, const float *beta, float *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_f32(x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward_swapped(const bf16 *x, int64_t ld_x, const bf16 *gamma, const bf16 *beta, bf16 *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_bf16(x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward_swapped(const bf16 *x, int64_t ld_x, const float *gamma, const float *beta, bf16 *y,
                                float *mean, float *rstd, int64_t rows, int64_t cols, float eps) {
  ops_table().layer_norm_forward_bf16_f32(x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_backward_swapped(const float *dy, const float *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const float *gamma, float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols) {
  ops_table().layer_norm_backward_f32(dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward_swapped(const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const bf16 *gamma, bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols) {
  ops_table().layer_norm_backward_bf16(dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward_swapped(const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd,
                                 const float *gamma, bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows,
                                 int64_t cols) {
  ops_table().layer_norm_backward_bf16_f32(dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}

}  // namespace hcops::ops
