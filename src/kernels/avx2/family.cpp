// AVX2+FMA microkernels: 16x6 (f32) and 8x6 (f64): 12 ymm accumulators, two A
// vectors and one broadcast, within the 16 registers (simd_tile.h). Partial
// rows use vmaskmov, which is slow on some AMD parts but runs on edge tiles only.
// bf16 A and B (f32 or bf16 C) on the same tile, widened exactly: bf16_tile.h.
#include <immintrin.h>

#include "kernels/avx2/bf16_tile.h"
#include "kernels/avx2/vec.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/pack.h"
#include "kernels/simd_tile.h"

HCOPS_FAMILY_FLAGS_MATCH(avx2);

namespace hcops::kernels::avx2 {
namespace {

constexpr int kNr = 6;

constexpr GemmKernel<Sgemm> sgemm = simd_gemm_kernel<Sgemm, F32, kNr>(&pack_a<float, 2 * F32::lanes>);
constexpr GemmKernel<Dgemm> dgemm = simd_gemm_kernel<Dgemm, F64, kNr>(&pack_a<double, 2 * F64::lanes>);
// No f32-as-bf16 modes (HCOPS_FP32_MATH): without bf16 instructions they
// would do the f32 kernel's FMAs plus the widening, slower and less exact.
constexpr GemmKernel<Bf16Gemm> bf16_f32 = pair_gemm_kernel<Bf16Gemm>();
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 = pair_gemm_kernel<Bf16Bf16Gemm>();

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm, bf16_f32, bf16_bf16>();

}  // namespace hcops::kernels::avx2
