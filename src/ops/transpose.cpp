// The transposing copy's entry points (ops/transpose.h), on the chosen
// family's table.
#include "ops/transpose.h"

#include "ops/family.h"

namespace hcops::ops {

void transpose(const float *src, int64_t ld_src, float *dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  ops_table().transpose_f32(src, ld_src, dst, ld_dst, rows, cols);
}
void transpose(const bf16 *src, int64_t ld_src, bf16 *dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  ops_table().transpose_bf16(src, ld_src, dst, ld_dst, rows, cols);
}

}  // namespace hcops::ops
