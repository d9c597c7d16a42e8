// See amx_emulated_family.h: the very code of the amx family, on tiles
// emulated in software.
#include "amx_emulated_family.h"

#include "kernels/amx/gemm_family.h"
#include "kernels/amx/tiles_emulated.h"

namespace amx_emulated {

using hcops::kernels::amx::EmulatedTiles;
using hcops::kernels::amx::tile_kernel;

const hcops::GemmKernel<hcops::Bf16Gemm> bf16_f32 = tile_kernel<EmulatedTiles, hcops::Bf16Gemm>();
const hcops::GemmKernel<hcops::Bf16Bf16Gemm> bf16_bf16 = tile_kernel<EmulatedTiles, hcops::Bf16Bf16Gemm>();
const hcops::GemmKernel<hcops::SgemmBf16> f32_as_bf16 = tile_kernel<EmulatedTiles, hcops::SgemmBf16>();
const hcops::GemmKernel<hcops::SgemmBf16x3> f32_as_bf16x3 = tile_kernel<EmulatedTiles, hcops::SgemmBf16x3>();

long dpbf16ps_executed() { return hcops::kernels::amx::emulated_dpbf16ps_count.load(); }

}  // namespace amx_emulated
