// SVE microkernels, vector-length agnostic: one binary for every SVE
// implementation, from 128-bit vectors (Neoverse V2, Grace) through 256
// (Neoverse V1, Graviton3) and 512 (A64FX) to 2048. The tile is two vectors
// of C's rows by 12 columns, so mr follows the vector length: 2 VL/32 rows
// of f32 (8 at 128 bits, 32 at 512, 128 at 2048), 2 VL/64 of f64. Its
// GemmKernels are made on first use (KernelRef::build), when svcntw() may
// be executed.
//
// The tile (kernels/sve/lane_tile.h, shared with sve_bf16) is 2 vectors x
// 12 columns, in one of two steps, chosen by the vector length:
// - below 512 bits, FMLA by lane of B quadwords (LD1RQ): 24 FMLA to 5
//   loads (f64: 8), 35 instructions a step (38). At 128 bits a step is
//   only 6 cycles of FMLA on 4 pipes (Neoverse V2), so the front end's
//   headroom matters: 35 instructions fit it where 44 (below) would take
//   5.5 of the 6 cycles even from V2's macro-op cache.
// - from 512 bits, FMLA (vectors) by each of B's 12 values broadcast
//   (LD1RW / LD1RD): 24 FMLA to 14 loads, 44 instructions. On LLVM 19's
//   A64FX model (512 bits, 2 pipes) indexed FMLA issues at half the vector
//   form's rate: 24 cycles a step, 50 % of the FMA peak, against 12 cycles
//   with broadcasts (BLIS's and OpenBLAS's A64FX kernels broadcast too).
// Both steps run at the peak on the Neoverse V1, V2 and N2 models
// (perf/kernel_mca.py, doc/aarch64.md); `make check-aarch64` runs the
// first at 128 and 256 bits and the second at 512 to 2048.
#include <arm_sve.h>

#include <cstdint>

#include "kernels/family_flags.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack.h"
#include "kernels/sve/lane_tile.h"

HCOPS_FAMILY_FLAGS_MATCH(sve);

namespace hcops::kernels::sve {
namespace {

// One k step on T panels, by lane: FMLA (indexed) of an A vector by one
// lane of a B quadword. ACLE's overloaded forms serve f32 and f64; an
// all-true byte predicate is all-true for every element size.
template <typename Ty>
struct FmlaLaneStep {
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

// The same step by broadcasts: FMLA of an A vector by one B value
// replicated from memory (the tile's "quadwords" hold one value: lane 0).
template <typename Ty>
struct FmlaBroadcastStep : FmlaLaneStep<Ty> {
  using AV = typename FmlaLaneStep<Ty>::AV;
  static constexpr int kPerQuad = 1;
  static AV load_quad(const Ty *p) {  // LD1RW / LD1RD
    if constexpr (sizeof(Ty) == 4) return svdup_n_f32(*p);
    else return svdup_n_f64(*p);
  }
  template <int L>
  static AV fma_lane(AV acc, AV a, AV q) {
    static_assert(L == 0, "one value per broadcast");
    return svmla_x(svptrue_b8(), acc, a, q);
  }
};

// Broadcasts from this vector length (bytes) up; below it, by lane.
constexpr uint64_t kBroadcastFromBytes = 64;

template <typename T>
void pack_a_vl(T *dst, const T *a, long lda, Trans ta, long i0, long mc, long p0, long kc) {
  pack_a_width(dst, a, lda, ta, i0, mc, p0, kc, LaneTile<FmlaLaneStep<T>, T>::mr());
}

template <typename Ty, template <typename> class Step>
GemmKernel<Ty> vl_kernel() {
  using T = typename Ty::c_type;
  using K = LaneTile<Step<T>, T>;
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

template <typename Ty>
GemmKernel<Ty> kernel_for_this_length() {
  return svcntb() >= kBroadcastFromBytes ? vl_kernel<Ty, FmlaBroadcastStep>() : vl_kernel<Ty, FmlaLaneStep>();
}

const void *make_sgemm() {
  static const GemmKernel<Sgemm> k = kernel_for_this_length<Sgemm>();
  return &k;
}
const void *make_dgemm() {
  static const GemmKernel<Dgemm> k = kernel_for_this_length<Dgemm>();
  return &k;
}

constexpr KernelRef kRefs[] = {KernelRef::built<Sgemm>(&make_sgemm), KernelRef::built<Dgemm>(&make_dgemm)};

}  // namespace

extern constexpr KernelList kernels = kernel_list(kRefs);

}  // namespace hcops::kernels::sve
