// AVX2+FMA microkernels: 16x6 (f32) and 8x6 (f64): 12 ymm accumulators, two A
// vectors and one broadcast, within the 16 registers (simd_tile.h). Partial
// rows use vmaskmov, which is slow on some AMD parts but runs on edge tiles only.
#include <immintrin.h>

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

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm>();

}  // namespace hcops::kernels::avx2
