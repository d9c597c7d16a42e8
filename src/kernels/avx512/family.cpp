// AVX-512F microkernels: 32x12 (f32) and 16x12 (f64), 24 zmm accumulators
// (simd_tile.h), partial rows through k-masks. On Zen 4 the kernel runs at
// ~90% of the FMA peak on L2-resident panels. Skinny products (n <= 16)
// stream A in place (skinny.h); shallow ones (k <= 16, f32) write C a column
// at a time (shallow.h).
#include <immintrin.h>

#include "kernels/avx512/transpose_pack.h"
#include "kernels/avx512/vec.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/pack.h"
#include "kernels/simd_tile.h"
#include "kernels/shallow.h"
#include "kernels/skinny.h"

HCOPS_FAMILY_FLAGS_MATCH(avx512);

namespace hcops::kernels::avx512 {
namespace {

constexpr int kNr = 12;

template <typename Ty, typename W>
constexpr GemmKernel<Ty> with_skinny(GemmKernel<Ty> k) {
  k.skinny = &skinny::kernel<W, typename Ty::c_type>;
  return k;
}

constexpr GemmKernel<Sgemm> sgemm = shallow::with_shallow<Sgemm, F32>(with_skinny<Sgemm, F32>(
    simd_gemm_kernel<Sgemm, F32, kNr>(&pack_a<float, 2 * F32::lanes, transpose_rows<F32, float>>)));
constexpr GemmKernel<Dgemm> dgemm = with_skinny<Dgemm, F64>(
    simd_gemm_kernel<Dgemm, F64, kNr>(&pack_a<double, 2 * F64::lanes, transpose_rows<F64, double>>));

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm>();

}  // namespace hcops::kernels::avx512
