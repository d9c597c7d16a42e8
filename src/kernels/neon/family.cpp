// AArch64 Advanced SIMD microkernels over simd_tile.h: 8x12 (f32) and 4x12
// (f64) tiles, 24 accumulator registers, two A vectors and one broadcast,
// within NEON's 32 (an x86 family's tile would leave half of them unused).
// f32 and f64 only: bf16 passes to the next row (generic).
#include <arm_neon.h>

#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/neon/vec.h"
#include "kernels/pack.h"
#include "kernels/simd_tile.h"

HCOPS_FAMILY_FLAGS_MATCH(neon);

namespace hcops::kernels::neon {
namespace {

constexpr int kNr = 12;

constexpr GemmKernel<Sgemm> sgemm = simd_gemm_kernel<Sgemm, F32, kNr>(&pack_a<float, 2 * F32::lanes>);
constexpr GemmKernel<Dgemm> dgemm = simd_gemm_kernel<Dgemm, F64, kNr>(&pack_a<double, 2 * F64::lanes>);

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm>();

}  // namespace hcops::kernels::neon
