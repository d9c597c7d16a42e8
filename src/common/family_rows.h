// The rows of kernels/families.def without their kernel lists: names, the
// CPU features each needs, and HCOPS_ISA's choice among them. GEMM's
// registry (kernels/registry.h) pairs each row with the GEMM kernels it
// serves; the operators (ops/family.h) with their own per-family tables.
// Both thus follow one CPU dispatch and one HCOPS_ISA. In libhcops_common:
// no kernel code here.
#pragma once

#include <cstdint>

namespace hcops {

struct FamilyRow {
  const char *name;     // HCOPS_ISA value, folder under src/kernels/
  uint64_t needs;       // CpuFeature bits
  const char *summary;  // for hcops-info
};

// The rows, in order of preference.
const FamilyRow *family_rows();
int family_row_count();

// Whether this CPU (and OS) can run row i.
bool row_runs_here(int i);

// The index of the first row the engines may use: HCOPS_ISA's family, or 0.
// An unknown name, or a family this CPU cannot run, warns once and gives 0.
int first_allowed_row();
// Whether HCOPS_ISA names row i and that row runs here: the user asked for
// exactly this family, so a kernel's measured preference for a later row
// (kernels/kernel.h's KernelRef::declines) does not apply.
bool isa_asked_for(int i);

}  // namespace hcops
