// The LayerNorm kernels of each family (ops/<family>/layer_norm.cpp, built
// with that family's -m flags), among which the dispatch
// (ops/layer_norm.cpp) chooses: ops/layer_norm.h's functions in namespace
// hcops::ops::<family>.
#pragma once

#include <cstdint>

#include "common/dtype.h"

#define HCOPS_OPS_LAYER_NORM_API                                                                                      \
  void layer_norm_forward(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,  \
                          int64_t rows, int64_t cols, float eps);                                                     \
  void layer_norm_forward(const bf16 *x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,      \
                          int64_t rows, int64_t cols, float eps);                                                     \
  void layer_norm_forward(const bf16 *x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,    \
                          int64_t rows, int64_t cols, float eps);                                                     \
  void layer_norm_backward(const float *dy, const float *x, const float *mean, const float *rstd, const float *gamma, \
                           float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);               \
  void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const bf16 *gamma,    \
                           bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);                \
  void layer_norm_backward(const bf16 *dy, const bf16 *x, const float *mean, const float *rstd, const float *gamma,   \
                           bf16 *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols);

namespace hcops::ops::avx512 {
HCOPS_OPS_LAYER_NORM_API
}
namespace hcops::ops::avx2 {
HCOPS_OPS_LAYER_NORM_API
}
namespace hcops::ops::generic {
HCOPS_OPS_LAYER_NORM_API
}
