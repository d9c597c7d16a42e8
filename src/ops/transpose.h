// A matrix copied transposed: dst (rows x cols, row stride ld_dst) = src^T,
// src (cols x rows, row stride ld_src), f32 or bf16 (bits copied). The
// framework layer uses it to give the row operators rows of a tensor whose
// last two dimensions are swapped (DiT's residual stream under PyTorch 2.x:
// the patch embedding's transpose, kept by every elementwise op after it),
// where a strided element-by-element copy (PyTorch's contiguous()) walks
// src with a stride of `rows` elements on every access.
//
// On the chosen family's table (ops/transpose_impl.h: in-register
// transposes of 16 x 16 or 8 x 8 blocks on x86, tiles of scalar copies
// elsewhere). Serial; the caller splits the rows across its threads.
#pragma once

#include <cstdint>

#include "common/api.h"
#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// The rows a caller hands one call at a time when it splits a transpose
// (a band: every source line it touches is then read whole).
constexpr int64_t kTransposeTile = 32;

void transpose(const float *src, int64_t ld_src, float *dst, int64_t ld_dst, int64_t rows, int64_t cols);
void transpose(const bf16 *src, int64_t ld_src, bf16 *dst, int64_t ld_dst, int64_t rows, int64_t cols);

}  // namespace hcops::ops
HCOPS_API_END
