// The column sums of ops/reduce.h, on the chosen family's table (ops/family.h:
// HCOPS_ISA and the CPU).
#include "ops/reduce.h"

#include "ops/family.h"

namespace hcops::ops {

void column_sums(const ColumnSums &s, int64_t o, int64_t c0, int64_t c1) { ops_table().column_sums(s, o, c0, c1); }

}  // namespace hcops::ops
