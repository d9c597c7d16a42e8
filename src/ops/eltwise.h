// Elementwise activations for training, forward and backward, f32 and bf16
// data with f32 arithmetic: GeLU (erf or tanh approximation, as PyTorch's
// approximate="none"|"tanh") and SiLU. Each call is serial over its n
// elements: the framework layer splits a tensor across its own threads.
// Input and output may be the same array (in place).
#pragma once

#include "common/api.h"
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

enum class GeluApprox : uint8_t { none, tanh };

void gelu_forward(const float *x, float *y, int64_t n, GeluApprox a);
void gelu_forward(const bf16 *x, bf16 *y, int64_t n, GeluApprox a);
// dx = dy * gelu'(x)
void gelu_backward(const float *dy, const float *x, float *dx, int64_t n, GeluApprox a);
void gelu_backward(const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n, GeluApprox a);

// y = x * sigmoid(x)
void silu_forward(const float *x, float *y, int64_t n);
void silu_forward(const bf16 *x, bf16 *y, int64_t n);
// dx = dy * sigmoid(x) * (1 + x * (1 - sigmoid(x)))
void silu_backward(const float *dy, const float *x, float *dx, int64_t n);
void silu_backward(const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n);

// y = bf16(x), rounded to nearest even as common/dtype.h's bf16(float) (NaN
// quietened, denormals kept): a bf16 operand for the next product.
void to_bf16(const float *x, bf16 *y, int64_t n);

}  // namespace hcops::ops
HCOPS_API_END
