// SVE microkernels, vector-length agnostic: one binary for every SVE
// implementation, from 128-bit vectors (Neoverse V2, Grace) through 256
// (Neoverse V1, Graviton3) and 512 (A64FX) to 2048. The tile is two vectors
// of C's rows by 12 columns, so mr follows the vector length: 2 VL/32 rows
// of f32 (8 at 128 bits, 32 at 512, 128 at 2048), 2 VL/64 of f64. Its
// GemmKernels are made on first use (KernelRef::build), when svcntw() may
// be executed.
//
// The tile (kernels/sve/lane_tile.h, shared with sve_bf16) is 2 vectors x
// 12 columns; this family's step is FMLA by lane of a B quadword on f32 or
// f64 panels: 24 FMLA to 5 (f32) or 8 (f64) loads.
#include <arm_sve.h>

#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack.h"
#include "kernels/sve/lane_tile.h"

HCOPS_FAMILY_FLAGS_MATCH(sve);

namespace hcops::kernels::sve {
namespace {

// One k step on T panels: FMLA (indexed) of an A vector by one lane of a B
// quadword (ACLE's overloaded forms serve f32 and f64; an all-true byte
// predicate is all-true for every element size).
template <typename Ty>
struct FmlaStep {
  using T = Ty;
  using In = Ty;
  using AV = decltype(svld1(svptrue_b8(), static_cast<const Ty *>(nullptr)));
  static constexpr int kIn = 1, kPerQuad = 16 / sizeof(Ty);
  static AV load(const Ty *p) { return svld1(svptrue_b8(), p); }
  static AV load_quad(const Ty *p) { return svld1rq(svptrue_b8(), p); }
  template <int L>
  static AV fma_lane(AV acc, AV a, AV q) {
    return svmla_lane(acc, a, q, L);
  }
};

template <typename T>
void pack_a_vl(T *dst, const T *a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  pack_a_width(dst, a, lda, ta, i0, mc, p0, kc, LaneTile<FmlaStep<T>, T>::mr());
}

template <typename Ty>
GemmKernel<Ty> vl_kernel() {
  using T = typename Ty::c_type;
  using K = LaneTile<FmlaStep<T>, T>;
  return {
      .mr = K::mr(),
      .nr = kLaneTileNr,
      .k_align = 1,
      .full = &K::full,
      .edge = &K::edge,
      .full_direct = nullptr,
      .edge_direct = nullptr,
      .pack_a = &pack_a_vl<T>,
      .pack_b = &pack_b<T, kLaneTileNr>,
      .macro = &macro_kernel<Ty>,
  };
}

const void *make_sgemm() {
  static const GemmKernel<Sgemm> k = vl_kernel<Sgemm>();
  return &k;
}
const void *make_dgemm() {
  static const GemmKernel<Dgemm> k = vl_kernel<Dgemm>();
  return &k;
}

constexpr KernelRef kRefs[] = {KernelRef::built<Sgemm>(&make_sgemm), KernelRef::built<Dgemm>(&make_dgemm)};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::sve
