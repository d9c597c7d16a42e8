// Softmax's entry points (ops/softmax.h), on the chosen family's table
// (ops/family.h: HCOPS_ISA and the CPU).
#include "ops/softmax.h"

#include "ops/family.h"

namespace hcops::ops {

void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, bool log) {
  ops_table().softmax_forward_f32(x, y, rows, cols, log);
}
void softmax_forward(const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log) {
  ops_table().softmax_forward_bf16(x, y, rows, cols, log);
}
void softmax_forward(const float *x, float *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse,
                     float scale) {
  ops_table().softmax_forward_lse(x, y, rows, cols, ld, lse, ld_lse, scale);
}
void softmax_forward(const float *x, bf16 *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse,
                     float scale) {
  ops_table().softmax_forward_lse_bf16(x, y, rows, cols, ld, lse, ld_lse, scale);
}
void softmax_from_lse(const float *x, float scale, const float *lse, int64_t ld_lse, float *p, bf16 *p16,
                      float *sums, int64_t rows, int64_t cols, int64_t ld) {
  ops_table().softmax_from_lse(x, scale, lse, ld_lse, p, p16, sums, rows, cols, ld);
}
void row_dots(const float *a, const float *b, float *out, int64_t rows, int64_t cols, int64_t ld) {
  ops_table().row_dots(a, b, out, rows, cols, ld);
}
void softmax_backward(const float *dy, const float *y, const float *sums, float *dx, int64_t rows, int64_t cols,
                      int64_t ld) {
  ops_table().softmax_backward_given_f32(dy, y, sums, dx, rows, cols, ld);
}
void softmax_backward(const float *dy, const float *y, const float *sums, bf16 *dx, int64_t rows, int64_t cols,
                      int64_t ld) {
  ops_table().softmax_backward_given_bf16(dy, y, sums, dx, rows, cols, ld);
}
void softmax_backward(const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log) {
  ops_table().softmax_backward_f32(dy, y, dx, rows, cols, log);
}
void softmax_backward(const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log) {
  ops_table().softmax_backward_bf16(dy, y, dx, rows, cols, log);
}

}  // namespace hcops::ops
