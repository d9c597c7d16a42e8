// Whether a GEMM packs op(B) into panels or lets the microkernel read it in
// place. HCOPS_PACK_B=auto|always|never (auto by default) overrides the choice,
// so the tests can run both paths on every shape. Likewise HCOPS_SKINNY=auto|
// always|never for the skinny and shallow kernels (kernels/skinny.h,
// shallow.h), which pack neither operand.
#pragma once

#include <cstddef>

#include "gemm/gemm.h"

namespace hcops {

enum class BPacking { automatic, always, never };

// HCOPS_PACK_B, read once.
BPacking b_packing();

// The automatic choice. op(B) = B (tb = N): the in-place microkernel reads
// nr contiguous column streams, while packing them is a transposing copy
// that costs more than those reads save, at any m (Xeon, AVX-512: 384 x 2048
// x 1536 TN +13%, 1536 x 2048 x 384 TN +8% in place). op(B) = B^T: packing is
// a plain copy, and in place every k step lands on a new row of B, so it
// pays only for few row blocks (m <= 2 mc) and when the kc rows one panel
// spans (`span_bytes`) stay within half of L2; beyond that the row hopping
// misses the TLB (384 x 1536 x 2048 NT: packing +12%).
bool b_in_place_pays(Trans tb, long m, long mc, size_t span_bytes, size_t l2_bytes);

// HCOPS_SKINNY, read once.
enum class SkinnyMode { automatic, always, never };
SkinnyMode skinny_mode();
// False for never.
bool skinny_allowed();
// HCOPS_SKINNY, read once: true for auto, where a family's measured costs
// choose between its thin kernels and one block for the products one block
// holds (kernel.h's GemmKernel::thin_choice); always gives the thin kernels
// every product they apply to, as for larger ones.
bool thin_choice_allowed();

}  // namespace hcops
