// The softmax kernels of each family (ops/<family>/softmax.cpp, built with
// that family's -m flags), among which the dispatch (ops/softmax.cpp)
// chooses: ops/softmax.h's functions in namespace hcops::ops::<family>.
#pragma once

#include <cstdint>

#include "common/dtype.h"

#define HCOPS_OPS_SOFTMAX_API                                                                              \
  void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, bool log);                    \
  void softmax_forward(const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log);                      \
  void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, float *lse, int64_t ld_lse);  \
  void softmax_backward(const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log); \
  void softmax_backward(const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log);

namespace hcops::ops::avx512 {
HCOPS_OPS_SOFTMAX_API
}
namespace hcops::ops::avx2 {
HCOPS_OPS_SOFTMAX_API
}
namespace hcops::ops::generic {
HCOPS_OPS_SOFTMAX_API
}
