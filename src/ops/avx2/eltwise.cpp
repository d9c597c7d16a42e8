// GeLU and SiLU on the avx2 family (built with its -m flags into libops_avx2).
#include "kernels/avx2/vec.h"
#include "ops/eltwise_impl.h"

namespace hcops::ops::avx2 {

using F = kernels::avx2::F32;
#define HCOPS_ELTWISE_DEFINE(fn, ...) \
  { eltwise::fn<F>(__VA_ARGS__); }
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DEFINE)

}  // namespace hcops::ops::avx2
