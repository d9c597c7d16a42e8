// The softmax kernels on the generic family's vector traits (ops/softmax_impl.h),
// compiled with its -m flags.
#include "kernels/generic/vec.h"
#include "ops/softmax_families.h"
#include "ops/softmax_impl.h"

namespace hcops::ops::generic {

using F = kernels::generic::F32;

void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, bool log) {
  rows::softmax_forward<F>(x, y, rows, cols, log);
}
void softmax_forward(const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log) {
  rows::softmax_forward<F>(x, y, rows, cols, log);
}
void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, float *lse, int64_t ld_lse) {
  rows::softmax_forward_lse<F>(x, y, rows, cols, lse, ld_lse);
}
void softmax_backward(const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log) {
  rows::softmax_backward<F>(dy, y, dx, rows, cols, log);
}
void softmax_backward(const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log) {
  rows::softmax_backward<F>(dy, y, dx, rows, cols, log);
}

}  // namespace hcops::ops::generic
