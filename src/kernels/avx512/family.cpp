// AVX-512F microkernels: 32x12 (f32) and 16x12 (f64), 24 zmm accumulators
// (simd_tile.h), partial rows through k-masks. On Zen 4 the kernel runs at
// ~90% of the FMA peak on L2-resident panels. Skinny products (n <= 16)
// stream A in place (skinny.h); shallow ones (k <= 16, f32) write C a column
// at a time (shallow.h). bf16 products widened onto the FMAs (bf16_tile.h),
// on the same tile, for CPUs without AVX512_BF16 or whose vdpbf16ps is the
// slower way (avx512_bf16/dot_rate.h).
#include <immintrin.h>

// GCC 12 warns inside its own shift/convert intrinsics (their
// _mm512_undefined_* operand) once inlined into bf16_tile.h's widening;
// nothing is uninitialised (as in avx512_bf16/family.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/avx512/bf16_tile.h"
#include "kernels/avx512/transpose_pack.h"
#include "kernels/transpose_rows.h"
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
  k.skinny = &skinny::kernel<W, typename Ty::acc_type, typename Ty::a_type, typename Ty::c_type>;
  return k;
}

constexpr GemmKernel<Sgemm> sgemm =
    shallow::with_shallow<Sgemm, F32>(with_skinny<Sgemm, F32>(simd_gemm_kernel<Sgemm, F32, kNr>(
        &pack_a<float, 2 * F32::lanes, transposing::transpose_rows<F32, float, transpose_square>>)));
constexpr GemmKernel<Dgemm> dgemm = with_skinny<Dgemm, F64>(simd_gemm_kernel<Dgemm, F64, kNr>(
    &pack_a<double, 2 * F64::lanes, transposing::transpose_rows<F64, double, transpose_square>>));

// No f32-as-bf16 modes (HCOPS_FP32_MATH): on FMAs they would be the f32
// kernel's work plus the widening, slower and less exact.
constexpr GemmKernel<Bf16Gemm> bf16_f32 =
    shallow::with_shallow<Bf16Gemm, F32>(with_skinny<Bf16Gemm, F32>(wide_gemm_kernel<Bf16Gemm>()));
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 =
    shallow::with_shallow<Bf16Bf16Gemm, F32>(with_skinny<Bf16Bf16Gemm, F32>(wide_gemm_kernel<Bf16Bf16Gemm>()));

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm, bf16_f32, bf16_bf16>();

}  // namespace hcops::kernels::avx512
