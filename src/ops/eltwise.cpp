// GeLU and SiLU: the entry points of ops/eltwise.h, on the chosen family's
// table (ops/family.h: HCOPS_ISA and the CPU).
#include "ops/eltwise.h"

#include "ops/family.h"

namespace hcops::ops {

void gelu_forward(const float *x, float *y, int64_t n, GeluApprox a) { ops_table().gelu_forward_f32(x, y, n, a); }
void gelu_forward(const bf16 *x, bf16 *y, int64_t n, GeluApprox a) { ops_table().gelu_forward_bf16(x, y, n, a); }
void gelu_backward(const float *dy, const float *x, float *dx, int64_t n, GeluApprox a) {
  ops_table().gelu_backward_f32(dy, x, dx, n, a);
}
void gelu_backward(const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n, GeluApprox a) {
  ops_table().gelu_backward_bf16(dy, x, dx, n, a);
}
void silu_forward(const float *x, float *y, int64_t n) { ops_table().silu_forward_f32(x, y, n); }
void silu_forward(const bf16 *x, bf16 *y, int64_t n) { ops_table().silu_forward_bf16(x, y, n); }
void silu_backward(const float *dy, const float *x, float *dx, int64_t n) {
  ops_table().silu_backward_f32(dy, x, dx, n);
}
void silu_backward(const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n) {
  ops_table().silu_backward_bf16(dy, x, dx, n);
}
void to_bf16(const float *x, bf16 *y, int64_t n) { ops_table().to_bf16(x, y, n); }
void from_bf16(const bf16 *x, float *y, int64_t n) { ops_table().from_bf16(x, y, n); }
void binary_rows(const BinaryRows &b, int64_t r0, int64_t r1) { ops_table().binary_rows(b, r0, r1); }

}  // namespace hcops::ops
