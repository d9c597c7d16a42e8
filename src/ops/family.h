// The kernel family the operators run on. Operators follow GEMM's CPU
// dispatch (kernels/families.def, HCOPS_ISA): the first row, from
// HCOPS_ISA's, that this CPU runs and that has operators (ops/families.def).
#pragma once

#include "common/api.h"
#include "ops/ops_table.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// The chosen family's table, chosen once (thread-safe) from the CPU's
// features and HCOPS_ISA.
const OpsTable &ops_table();

// Its name, as HCOPS_ISA spells it.
inline const char *ops_family() { return ops_table().family; }

// The table of the family named `name`, or null when that family has no
// operators, or none for this CPU's vector length (tests; the choice is
// ops_table()'s).
const OpsTable *ops_table_of(const char *name);

// Whether ops/families.def lists the family, at any vector length.
bool has_operators(const char *name);

}  // namespace hcops::ops
HCOPS_API_END
