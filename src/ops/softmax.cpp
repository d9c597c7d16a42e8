// Softmax's dispatch: the kernels of the family the operators run on
// (ops/family.h, chosen once from the CPU and HCOPS_ISA).
#include "ops/softmax.h"

#include "ops/family.h"
#include "ops/softmax_families.h"

namespace hcops::ops {

namespace {

template <typename T>
void forward(const T *x, T *y, int64_t rows, int64_t cols, bool log) {
  switch (family()) {
    case Family::avx512: return avx512::softmax_forward(x, y, rows, cols, log);
    case Family::avx2: return avx2::softmax_forward(x, y, rows, cols, log);
    case Family::generic: break;
  }
  generic::softmax_forward(x, y, rows, cols, log);
}

template <typename T>
void backward(const T *dy, const T *y, T *dx, int64_t rows, int64_t cols, bool log) {
  switch (family()) {
    case Family::avx512: return avx512::softmax_backward(dy, y, dx, rows, cols, log);
    case Family::avx2: return avx2::softmax_backward(dy, y, dx, rows, cols, log);
    case Family::generic: break;
  }
  generic::softmax_backward(dy, y, dx, rows, cols, log);
}

}  // namespace

void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, bool log) { forward(x, y, rows, cols, log); }
void softmax_forward(const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log) { forward(x, y, rows, cols, log); }
void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, float *lse, int64_t ld_lse) {
  switch (family()) {
    case Family::avx512: return avx512::softmax_forward(x, y, rows, cols, lse, ld_lse);
    case Family::avx2: return avx2::softmax_forward(x, y, rows, cols, lse, ld_lse);
    case Family::generic: break;
  }
  generic::softmax_forward(x, y, rows, cols, lse, ld_lse);
}
void softmax_backward(const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log) {
  backward(dy, y, dx, rows, cols, log);
}
void softmax_backward(const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log) {
  backward(dy, y, dx, rows, cols, log);
}

}  // namespace hcops::ops
