// The kernel family the operators run on. Operators follow GEMM's CPU
// dispatch (kernels/families.def, HCOPS_ISA): the first row, from
// HCOPS_ISA's, that this CPU runs and that has operator kernels. Every
// operator has kernels for each family below.
#pragma once

#include <cstdint>

namespace hcops::ops {

enum class Family : uint8_t { avx512, avx2, generic };

// Chosen once (thread-safe), from the CPU's features and HCOPS_ISA.
Family family();
const char *family_name(Family f);

}  // namespace hcops::ops
