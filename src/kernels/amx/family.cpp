// The amx family: bf16 GEMM on AMX tiles (TDPBF16PS), 32x32 blocks of C as
// 2 x 2 tiles, for bf16 inputs with an f32 or bf16 C and for f32 inputs
// converted to bf16 while packing (HCOPS_FP32_MATH=bf16, bf16x3). The code
// is gemm_family.h on the hardware tiles; the tests run the same code on
// emulated tiles (tiles_emulated.h). Only chosen where cpu_features() says
// the CPU, XCR0 and Linux's permission for the tile state all allow it.
#include "kernels/amx/gemm_family.h"
#include "kernels/avx512_bf16/vec.h"
#include "kernels/amx/skinny_tiles.h"
#include "kernels/avx512_bf16/shallow_bf16.h"
#include "kernels/amx/tiles_hw.h"
#include "kernels/family_flags.h"

HCOPS_FAMILY_FLAGS_MATCH(amx);

namespace hcops::kernels::amx {
namespace {

// Skinny (n <= 16) and shallow (k <= 16) products of bf16 inputs skip the
// packed path: packing costs more than such a product, and a shallow one
// would be padded to 32 steps of k. The skinny kernel reads A in place, on
// the tiles where its rows are contiguous in k (skinny_tiles.h); the
// shallow one writes C from AVX-512 registers, two steps of k per
// vdpbf16ps (avx512_bf16/shallow_bf16.h).
template <typename Ty>
constexpr GemmKernel<Ty> thin_paths(GemmKernel<Ty> k) {
  return avx512_bf16::shallow_bf16::with_shallow(skinny_tiles::with_skinny(k));
}
constexpr GemmKernel<Bf16Gemm> bf16_f32 = thin_paths(tile_kernel<HwTiles, Bf16Gemm>());
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 = thin_paths(tile_kernel<HwTiles, Bf16Bf16Gemm>());
constexpr GemmKernel<SgemmBf16> f32_as_bf16 = tile_kernel<HwTiles, SgemmBf16>();
constexpr GemmKernel<SgemmBf16x3> f32_as_bf16x3 = tile_kernel<HwTiles, SgemmBf16x3>();

}  // namespace

extern constexpr KernelList kernels = kernel_list<bf16_f32, bf16_bf16, f32_as_bf16, f32_as_bf16x3>();

}  // namespace hcops::kernels::amx
