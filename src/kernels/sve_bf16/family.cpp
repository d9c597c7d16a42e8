// The sve_bf16 family: the four bf16 GEMMs (kernels/gemm_types.h) by SVE's
// BFDOT, vector-length agnostic, for SVE CPUs with FEAT_BF16 and no SME
// (Neoverse V1/V2, Graviton3/4, Grace); f32 and f64 come from the next row,
// sve. The tile is the sve family's (kernels/sve/lane_tile.h), on K-pair
// panels (pack_pairs.h): two vectors of C's rows (2 VL/32, as f32) by 12
// columns. One pair step is two A vectors (VL/32 rows x one k pair each),
// three 128-bit quadwords of B pairs replicated across the vector (LD1RQH),
// and 24 BFDOT by lane, each adding to every f32 lane the dot product of its
// row's pair with one column's pair: twice the f32 FMLA's multiply-adds per
// instruction.
//
// BFDOT's arithmetic (FEAT_BF16 without FEAT_EBF16) is not IEEE: the two
// products are summed and then added to the accumulator, each step rounded
// to odd, with denormal inputs and results flushed to zero and NaNs made
// the default NaN; it raises no floating-point flags. The products of bf16
// values are exact in f32, so each pair step adds at most two roundings of
// 1 ulp of f32 (RNE's are half that): the bf16 GEMMs' bound
// (tests/engine/test_gemm_bf16) holds. avx512_bf16's vdpbf16ps flushes the
// same way.
//
// C is f32, or bf16 widened on load and rounded to nearest even on store
// (bit for bit bf16(float), common/dtype.h; kernels/sve/bf16.h).
#include <arm_sve.h>

#include "common/dtype.h"
#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack_pairs.h"
#include "kernels/sve/lane_tile.h"

HCOPS_FAMILY_FLAGS_MATCH(sve_bf16);

namespace hcops::kernels::sve_bf16 {
namespace {

using sve::kLaneTileNr;
using sve::LaneTile;

// One pair step on K-pair panels: BFDOT (indexed) of an A vector (VL/32
// rows, one pair each) by one column pair of a B quadword (4 pairs).
struct BfdotStep {
  using T = float;
  using In = bf16;
  using AV = svbfloat16_t;
  static constexpr int kIn = 2, kPerQuad = 4;
  static AV load(const bf16 *p) { return svreinterpret_bf16_u16(svld1_u16(svptrue_b16(), &p->bits)); }
  static AV load_quad(const bf16 *p) { return svreinterpret_bf16_u16(svld1rq_u16(svptrue_b16(), &p->bits)); }
  template <int L>
  static svfloat32_t fma_lane(svfloat32_t acc, AV a, AV q) {
    return svbfdot_lane_f32(acc, a, q, L);
  }
};

template <typename Ty>
void pack_a_vl(bf16 *dst, const typename Ty::a_type *a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  pack_a_pairs_width<typename Ty::a_type, Ty::splits>(dst, a, lda, ta, i0, mc, p0, kc,
                                                      LaneTile<BfdotStep, float>::mr());
}

template <typename Ty>
const void *make() {
  using K = LaneTile<BfdotStep, typename Ty::c_type>;
  static const GemmKernel<Ty> k = {
      .mr = K::mr(),
      .nr = kLaneTileNr,
      .k_align = 2,
      .full = &K::full,
      .edge = &K::edge,
      .full_direct = nullptr,  // k is padded to pairs: B is always packed
      .edge_direct = nullptr,
      .pack_a = &pack_a_vl<Ty>,
      .pack_b = &pack_b_pairs<typename Ty::b_type, kLaneTileNr, Ty::splits>,
      .macro = &macro_kernel<Ty>,
      .bf16_instructions = true,  // BFDOT
  };
  return &k;
}

constexpr KernelRef kRefs[] = {KernelRef::built<Bf16Gemm>(&make<Bf16Gemm>),
                               KernelRef::built<Bf16Bf16Gemm>(&make<Bf16Bf16Gemm>),
                               KernelRef::built<SgemmBf16>(&make<SgemmBf16>),
                               KernelRef::built<SgemmBf16x3>(&make<SgemmBf16x3>)};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::sve_bf16
