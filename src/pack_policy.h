// Whether a GEMM packs op(B) into panels or lets the microkernel read it in
// place. HCOPS_PACK_B=auto|always|never (auto by default) overrides the choice,
// so the tests can run both paths on every shape.
#pragma once

namespace hcops {

enum class BPacking { automatic, always, never };

// HCOPS_PACK_B, read once.
BPacking b_packing();

// The automatic choice for an m-row product blocked by mc rows: packing B
// costs a copy of it, reading it in place costs strided reads of it once per
// mc block of rows, which outweighs the copy beyond two blocks (measured on
// Zen 4: 384 x 2048 x 1536 +4-8% in place, 1536 x 2048 x 384 and 2048^3 -5%).
bool b_in_place_pays(long m, long mc);

}  // namespace hcops
