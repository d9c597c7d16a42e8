// The amx family's code (kernels/amx/gemm_family.h) instantiated on the
// emulated tiles (kernels/amx/tiles_emulated.h), in its own translation
// unit built with the family's AVX-512 flags (amx_emulated_family.cpp), so
// that the test program itself runs anywhere until it has checked the CPU.
#pragma once

#include "kernels/kernel.h"

namespace amx_emulated {

extern const hcops::GemmKernel<hcops::Bf16Gemm> bf16_f32;
extern const hcops::GemmKernel<hcops::Bf16Bf16Gemm> bf16_bf16;
extern const hcops::GemmKernel<hcops::SgemmBf16> f32_as_bf16;
extern const hcops::GemmKernel<hcops::SgemmBf16x3> f32_as_bf16x3;

// TDPBF16PS the emulation has executed, over all threads.
long dpbf16ps_executed();

}  // namespace amx_emulated
