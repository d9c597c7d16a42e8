// AVX2+FMA microkernels: 16x6 (f32) and 8x6 (f64): 12 ymm accumulators, two A
// vectors and one broadcast, within the 16 registers (simd_tile.h). Partial
// rows use vmaskmov, which is slow on some AMD parts but runs on edge tiles only.
#include <immintrin.h>

#include "kernels/pack.h"
#include "kernels/kernel.h"
#include "kernels/simd_tile.h"
#include "kernels/avx2/vec.h"

namespace hcops {
namespace kernels {
namespace avx2 {
namespace {

constexpr int kNr = 6;

using S = SimdKernel<F32, float, kNr>;
using D = SimdKernel<F64, double, kNr>;

}  // namespace

extern const KernelSet set = {
    Isa::avx2,
    {2 * F32::lanes, kNr, &S::full, &S::edge, &pack_a<float, 2 * F32::lanes>, &pack_b<float, kNr>, &S::full_direct, &S::edge_direct},
    {2 * F64::lanes, kNr, &D::full, &D::edge, &pack_a<double, 2 * F64::lanes>, &pack_b<double, kNr>, &D::full_direct, &D::edge_direct},
};

}  // namespace avx2
}  // namespace kernels
}  // namespace hcops
