// The sme family: f32 GEMM by FMOPA and the bf16 GEMMs by BFMOPA, outer
// products into SME's ZA tiles (gemm_family.h on the hardware tiles,
// tiles_hw.h), 2 SVL/32 x 2 SVL/32 blocks of C; f64 by FMOPA .d into its
// f64 tiles, 2 SVL/64 x 2 SVL/64, where the CPU has FEAT_SME_F64F64 (an
// optional part of SME: elsewhere DGEMM goes to the next row, sve or
// neon). The tests run the same code on emulated tiles (tiles_emulated.h)
// at several vector lengths.
#include "common/cpu_features.h"
#include "kernels/family_flags.h"
#include "kernels/sme/gemm_family.h"
#include "kernels/sme/tiles_hw.h"

HCOPS_FAMILY_FLAGS_MATCH(sme);

namespace hcops::kernels::sme {
namespace {

template <typename Ty>
const void *make() {
  static const GemmKernel<Ty> k = [] {
    GemmKernel<Ty> t = tile_kernel<HwTiles, Ty>();
    t.bf16_instructions = std::is_same_v<typename Ty::packed_a_type, bf16>;  // BFMOPA
    return t;
  }();
  return &k;
}

constexpr KernelRef kRefs[] = {KernelRef::built<Sgemm>(&make<Sgemm>), KernelRef::built<Bf16Gemm>(&make<Bf16Gemm>),
                               KernelRef::built<Bf16Bf16Gemm>(&make<Bf16Bf16Gemm>),
                               KernelRef::built<SgemmBf16>(&make<SgemmBf16>),
                               KernelRef::built<SgemmBf16x3>(&make<SgemmBf16x3>),
                               KernelRef::built<Dgemm>(&make<Dgemm>, kSmeF64F64)};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::sme
