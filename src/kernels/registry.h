// The kernel registry: the rows of families.def with their GEMM kernels,
// and the choice among them, made once per datatype combination from the
// CPU's features and HCOPS_ISA (the first row HCOPS_ISA allows,
// common/family_rows.h).
#pragma once

#include <cstdint>

#include "common/family_rows.h"
#include "kernels/kernel.h"

namespace hcops {

// A row of families.def (common/family_rows.h: name, CPU features, summary)
// with the GEMM kernels its folder serves.
struct KernelFamily : FamilyRow {
  const KernelList *kernels;  // the datatypes it serves
};

// The table, in order of preference (the rows of family_rows()).
const KernelFamily *kernel_families();
int kernel_family_count();

// Whether this CPU (and OS) can run `f`.
bool family_runs_here(const KernelFamily &f);

// The kernel chosen for the datatypes Ty, with the family it belongs to;
// null kernel when no allowed family serves Ty.
template <typename Ty>
struct ChosenKernel {
  const KernelFamily *family;
  const GemmKernel<Ty> *kernel;
};
template <typename Ty>
const ChosenKernel<Ty> &chosen_kernel();

#define HCOPS_EXTERN_CHOSEN(Ty, name) extern template const ChosenKernel<Ty> &chosen_kernel<Ty>();
HCOPS_GEMM_DATATYPES(HCOPS_EXTERN_CHOSEN)
#undef HCOPS_EXTERN_CHOSEN

}  // namespace hcops
