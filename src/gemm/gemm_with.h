// The GEMM engine on a kernel the caller names rather than the one the
// registry chose: for tests of the driver's contract with a family (a
// reference family with padded k, a new family before its row exists).
#pragma once

#include "gemm/gemm.h"
#include "kernels/kernel.h"

namespace hcops {

template <typename Ty>
GemmReport gemm_with(const GemmArgs<Ty> &args, const GemmKernel<Ty> &kernel, const char *family);

extern template GemmReport gemm_with<Sgemm>(const GemmArgs<Sgemm> &, const GemmKernel<Sgemm> &, const char *);
extern template GemmReport gemm_with<Dgemm>(const GemmArgs<Dgemm> &, const GemmKernel<Dgemm> &, const char *);
extern template GemmReport gemm_with<Bf16Gemm>(const GemmArgs<Bf16Gemm> &, const GemmKernel<Bf16Gemm> &, const char *);
extern template GemmReport gemm_with<Bf16Bf16Gemm>(const GemmArgs<Bf16Bf16Gemm> &, const GemmKernel<Bf16Bf16Gemm> &,
                                                   const char *);
extern template GemmReport gemm_with<SgemmBf16>(const GemmArgs<SgemmBf16> &, const GemmKernel<SgemmBf16> &,
                                                const char *);
extern template GemmReport gemm_with<SgemmBf16x3>(const GemmArgs<SgemmBf16x3> &, const GemmKernel<SgemmBf16x3> &,
                                                  const char *);

}  // namespace hcops
