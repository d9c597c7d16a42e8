// GeLU and SiLU on the generic family (built with its -m flags into libops_generic).
#include "kernels/generic/vec.h"
#include "ops/eltwise_impl.h"

namespace hcops::ops::generic {

using F = kernels::generic::F32;
#define HCOPS_ELTWISE_DEFINE(fn, ...) \
  { eltwise::fn<F>(__VA_ARGS__); }
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DEFINE)

}  // namespace hcops::ops::generic
