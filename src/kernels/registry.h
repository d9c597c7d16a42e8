// The kernel registry: the table of kernel families (families.def) and the
// choice among them, made once per datatype combination from the CPU's
// features and HCOPS_ISA.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace hcops {

struct KernelFamily {
  const char *name;           // HCOPS_ISA value, folder under src/kernels/
  uint64_t needs;             // CpuFeature bits
  const char *summary;        // for hcops-info
  const KernelList *kernels;  // the datatypes it serves
};

// The table, in order of preference.
const KernelFamily *kernel_families();
int kernel_family_count();

// Whether this CPU (and OS) can run `f`.
bool family_runs_here(const KernelFamily &f);

// The first family of the table this CPU runs (generic on any x86-64).
const KernelFamily &best_family();

// The index of the first row the engine may use: HCOPS_ISA's family, or 0.
// An unknown name, or a family this CPU cannot run, warns once and gives 0.
int first_allowed_family();

// The kernel chosen for the datatypes Ty, with the family it belongs to;
// null kernel when no allowed family serves Ty.
template <typename Ty>
struct ChosenKernel {
  const KernelFamily *family;
  const GemmKernel<Ty> *kernel;
};
template <typename Ty>
const ChosenKernel<Ty> &chosen_kernel();

extern template const ChosenKernel<Sgemm> &chosen_kernel<Sgemm>();
extern template const ChosenKernel<Dgemm> &chosen_kernel<Dgemm>();
extern template const ChosenKernel<Bf16Gemm> &chosen_kernel<Bf16Gemm>();
extern template const ChosenKernel<Bf16Bf16Gemm> &chosen_kernel<Bf16Bf16Gemm>();
extern template const ChosenKernel<SgemmBf16> &chosen_kernel<SgemmBf16>();
extern template const ChosenKernel<SgemmBf16x3> &chosen_kernel<SgemmBf16x3>();

}  // namespace hcops
