// The softmax kernels on the avx512 family's vector traits (ops/softmax_impl.h),
// compiled with its -m flags.
// GCC 12's -Wuninitialized flags the _mm512_undefined_ps() inside its own
// AVX-512 intrinsics once inlined (GCC bug 105593): silenced for the
// intrinsics headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "kernels/avx512/vec.h"
#include "ops/softmax_families.h"
#include "ops/softmax_impl.h"

namespace hcops::ops::avx512 {

using F = kernels::avx512::F32;

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

}  // namespace hcops::ops::avx512
