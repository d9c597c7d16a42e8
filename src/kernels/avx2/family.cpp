// AVX2+FMA microkernels: 16x6 (f32) and 8x6 (f64): 12 ymm accumulators, two A
// vectors and one broadcast, within the 16 registers (simd_tile.h). Partial
// rows are read with vmaskmov and written with whole 4, 2 and 1-lane stores
// (vec.h: vmaskmov to memory is slow on AMD's Zen 1-3). op(A)^T is packed
// through 8 x 8 (f32) and 4 x 4 (f64) transposes in registers
// (transpose_pack.h).
// bf16 A and B (f32 or bf16 C) on the same tile, widened exactly: bf16_tile.h.
// Skinny products (n <= 16) stream A in place and shallow ones (k <= 16)
// write C from registers, as on AVX-512 (skinny.h, shallow.h), with blocks
// sized for 16 registers; for f32, f64 (skinny) and bf16 inputs, widened.
#include <immintrin.h>

#include <type_traits>

#include "kernels/avx2/bf16_tile.h"
#include "kernels/avx2/thin_choice.h"
#include "kernels/avx2/transpose_pack.h"
#include "kernels/transpose_rows.h"
#include "kernels/avx2/vec.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/pack.h"
#include "kernels/shallow.h"
#include "kernels/simd_tile.h"
#include "kernels/skinny.h"

HCOPS_FAMILY_FLAGS_MATCH(avx2);

namespace hcops::kernels::avx2 {
namespace {

constexpr int kNr = 6;

template <typename Ty, typename W>
constexpr GemmKernel<Ty> with_skinny(GemmKernel<Ty> k) {
  static_assert(std::is_same_v<typename Ty::a_type, typename Ty::b_type>, "A and B of one type");
  k.skinny = &skinny::kernel<W, typename Ty::acc_type, typename Ty::a_type, typename Ty::c_type>;
  return k;
}

// A second thread pays once it has about 5 us of f32 FMAs, what starting
// and joining it costs (the team's timer being off for short regions,
// common/contention.h): 500 kflop a thread (the engine's default is 2
// Mflop). Measured on a 2-core Zen 3 guest, alternated against the
// default: 96^3 and 64 x 64 x 256 in f32 1.3x and 1.6x; 64^3 in f32 gained
// nothing from a second thread at 250 kflop (TN and NT lost 17 %). f64
// keeps the same flops (10 us): 64^3 dgemm on two threads at 250 kflop was
// 1.2-1.55x one thread in some runs and 0.7-0.8x in others, minutes apart
// (the cause, on the guest's side or its host's, not found); 80^3 and 96^3
// were 1.1-1.8x in every run. The bf16 kernels, not measured, keep the
// default.
constexpr long kMinFlopsPerThread = 500'000;
template <typename Ty>
constexpr GemmKernel<Ty> with_thread_grain(GemmKernel<Ty> k) {
  k.min_flops_per_thread = kMinFlopsPerThread;
  return k;
}

// Thin products one block holds choose their path by this family's
// measured costs (thin_choice.h). The bf16 kernels, not measured, keep the
// thin kernels for every product those take.
template <typename Ty, const ThinCosts &C>
constexpr GemmKernel<Ty> with_thin_choice(GemmKernel<Ty> k) {
  k.thin_choice = &thin_choice<C>;
  return k;
}

constexpr GemmKernel<Sgemm> sgemm = with_thin_choice<Sgemm, kThinCostsF32>(with_thread_grain<Sgemm>(
    shallow::with_shallow<Sgemm, F32>(with_skinny<Sgemm, F32>(simd_gemm_kernel<Sgemm, F32, kNr>(
        &pack_a<float, 2 * F32::lanes, transposing::transpose_rows<F32, float, transpose_square>>)))));
constexpr GemmKernel<Dgemm> dgemm = with_thin_choice<Dgemm, kThinCostsF64>(
    with_thread_grain<Dgemm>(with_skinny<Dgemm, F64>(simd_gemm_kernel<Dgemm, F64, kNr>(
        &pack_a<double, 2 * F64::lanes, transposing::transpose_rows<F64, double, transpose_square>>))));
static_assert(kThinCostsF32.lanes == F32::lanes && kThinCostsF32.mr == sgemm.mr && kThinCostsF32.nr == sgemm.nr &&
                  kThinCostsF64.lanes == F64::lanes && kThinCostsF64.mr == dgemm.mr && kThinCostsF64.nr == dgemm.nr,
              "thin_choice.h's costs are of these tiles");
// No f32-as-bf16 modes (HCOPS_FP32_MATH): without bf16 instructions they
// would do the f32 kernel's FMAs plus the widening, slower and less exact.
constexpr GemmKernel<Bf16Gemm> bf16_f32 =
    shallow::with_shallow<Bf16Gemm, F32>(with_skinny<Bf16Gemm, F32>(pair_gemm_kernel<Bf16Gemm>()));
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 =
    shallow::with_shallow<Bf16Bf16Gemm, F32>(with_skinny<Bf16Bf16Gemm, F32>(pair_gemm_kernel<Bf16Bf16Gemm>()));

}  // namespace

extern constexpr KernelList kernels = kernel_list<sgemm, dgemm, bf16_f32, bf16_bf16>();

}  // namespace hcops::kernels::avx2
