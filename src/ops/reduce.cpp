// The column sums of ops/reduce.h, on the chosen family's table (ops/family.h:
// HCOPS_ISA and the CPU).
#include "ops/reduce.h"

#include "ops/family.h"

namespace hcops::ops {

void column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1) { ops_table().column_sums(s, o, c0, c1); }

void column_partial_sums(const ColumnSums &s, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                         float *total, float *comp) {
  ops_table().column_partial_sums(s, o, r0, r1, c0, c1, total, comp);
}

void combine_column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1, const float *total,
                         const float *comp, int64_t blocks) {
  ops_table().combine_column_sums(s, o, c0, c1, total, comp, blocks);
}

}  // namespace hcops::ops
