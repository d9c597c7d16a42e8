// LayerNorm's dispatch: the kernels of the family the operators run on
// (ops/family.h, chosen once from the CPU and HCOPS_ISA).
#include "ops/layer_norm.h"

#include <atomic>

#include "ops/family.h"
#include "ops/layer_norm_families.h"

namespace hcops::ops {

namespace {

template <typename T, typename P>
void forward(const T *x, const P *gamma, const P *beta, T *y, float *mean, float *rstd, int64_t rows, int64_t cols,
             float eps) {
  switch (family()) {
    case Family::avx512: return avx512::layer_norm_forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
    case Family::avx2: return avx2::layer_norm_forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
    case Family::generic: break;
  }
  generic::layer_norm_forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}

template <typename T, typename P>
void backward(const T *dy, const T *x, const float *mean, const float *rstd, const P *gamma, T *dx, float *dgamma,
              float *dbeta, int64_t rows, int64_t cols) {
  switch (family()) {
    case Family::avx512: return avx512::layer_norm_backward(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, rows, cols);
    case Family::avx2: return avx2::layer_norm_backward(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, rows, cols);
    case Family::generic: break;
  }
  generic::layer_norm_backward(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, rows, cols);
}

std::atomic<int> overflow{int(VarianceOverflow::nan_rstd)};

}  // namespace

void set_variance_overflow(VarianceOverflow v) { overflow.store(int(v), std::memory_order_relaxed); }
VarianceOverflow variance_overflow() { return VarianceOverflow(overflow.load(std::memory_order_relaxed)); }

void layer_norm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_forward(const bf16 *x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,
                        int64_t rows, int64_t cols, float eps) {
  forward(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
void layer_norm_backward(const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma,
                         float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  backward(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  backward(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}
void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const float *gamma,
                         bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols) {
  backward(dy, x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols);
}

}  // namespace hcops::ops
