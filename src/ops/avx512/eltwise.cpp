// GeLU and SiLU on the avx512 family (built with its -m flags into libops_avx512).
// GCC 12 warns that the intrinsics' _mm512_undefined_ps() pass-through (max,
// min, cvtps, roundscale) is "used uninitialized" once inlined: a false
// positive of its headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/avx512/vec.h"
#include "ops/eltwise_impl.h"

namespace hcops::ops::avx512 {

using F = kernels::avx512::F32;
#define HCOPS_ELTWISE_DEFINE(fn, ...) \
  { eltwise::fn<F>(__VA_ARGS__); }
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DEFINE)

}  // namespace hcops::ops::avx512
