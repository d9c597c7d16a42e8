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
// y = float(x), exactly: attention's bf16 slices widened where the products
// have no bf16 instructions (a scalar loop there cost half as much as the
// products themselves).
void from_bf16(const bf16 *x, float *y, int64_t n);

// out = x + y or x * y over rows x cols, each operand f32 or bf16, the sum
// or product in f32 and rounded once into a bf16 out: PyTorch's add (alpha
// 1) and mul with its type promotion (f32 if either is), equal to them bit
// for bit. An operand's row r is its row r / every (every = 1: the same
// shape; T: one row for each T rows of out, adaLN's (B, 1, C) against
// (B, T, C)), at x + (r / x_every) x_ld (a row stride: adaLN's chunks of
// one (B, 6 C) tensor are rows 6 C apart); out's rows are dense.
//
// y may instead be given transposed (y_batch_rows > 0; y_every 1): out's
// rows come in batches of y_batch_rows, and in batch q out's element
// (i, j) takes y[q * y_batch_stride + j * y_ld + i] (DiT's residual stream,
// whose last two dimensions PyTorch 2.x keeps swapped, added to a
// contiguous tensor: one of the two is transposed in the other's order).
enum class BinaryOp : uint8_t { add, mul };
struct BinaryRows {
  BinaryOp op;
  Dtype x_type, y_type, out_type;  // f32 or bf16
  const void *x, *y;
  void *out;
  int64_t cols;
  int64_t x_every, y_every;
  int64_t x_ld, y_ld;
  int64_t y_batch_rows = 0, y_batch_stride = 0;  // y transposed when y_batch_rows > 0
};
// Rows [r0, r1) of out (serial: the framework layer splits the rows).
void binary_rows(const BinaryRows &b, int64_t r0, int64_t r1);

}  // namespace hcops::ops
HCOPS_API_END
