// The GEMM engine on a kernel the caller names rather than the one the
// registry chose: for tests of the driver's contract with a family (a
// reference family with padded k, a new family before its row exists).
#pragma once

#include "gemm/gemm.h"
#include "kernels/kernel.h"

namespace hcops {

template <typename Ty>
GemmReport gemm_with(const GemmArgs<Ty> &args, const GemmKernel<Ty> &kernel, const char *family);
// The path gemm_with gives a product among the thin kernels and one block
// (kernel.h's ThinPath: one_block also when neither thin kernel takes it),
// and whether one block holds it: for hcops-info, which says so without
// running the product.
template <typename Ty>
ThinPath thin_path_with(const GemmArgs<Ty> &args, const GemmKernel<Ty> &kernel, bool *one_block_holds);
// hold_packed_a (gemm/held_a.h) for a product on this kernel.
template <typename Ty>
bool hold_packed_a_with(const GemmArgs<Ty> &args, const GemmKernel<Ty> &kernel, HeldPackedA &held);

#define HCOPS_EXTERN_GEMM_WITH(Ty, name)                                                                \
  extern template GemmReport gemm_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, const char *); \
  extern template ThinPath thin_path_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, bool *);    \
  extern template bool hold_packed_a_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, HeldPackedA &);
HCOPS_GEMM_DATATYPES(HCOPS_EXTERN_GEMM_WITH)
#undef HCOPS_EXTERN_GEMM_WITH

}  // namespace hcops
