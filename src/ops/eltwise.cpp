// GeLU and SiLU: the entry points of ops/eltwise.h, dispatched to the kernel
// family ops::family() chose (HCOPS_ISA and the CPU).
#include "ops/eltwise.h"

#include "ops/eltwise_impl.h"
#include "ops/family.h"

namespace hcops::ops {

#define HCOPS_ELTWISE_DECLARE(fn, ...) ;
namespace avx512 {
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DECLARE)
}
namespace avx2 {
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DECLARE)
}
namespace generic {
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DECLARE)
}

#define HCOPS_ELTWISE_DISPATCH(fn, ...)                    \
  {                                                        \
    switch (family()) {                                    \
      case Family::avx512: return avx512::fn(__VA_ARGS__); \
      case Family::avx2: return avx2::fn(__VA_ARGS__);     \
      case Family::generic: break;                         \
    }                                                      \
    return generic::fn(__VA_ARGS__);                       \
  }
HCOPS_ELTWISE_ENTRY_POINTS(HCOPS_ELTWISE_DISPATCH)

}  // namespace hcops::ops
