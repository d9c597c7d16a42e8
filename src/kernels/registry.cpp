#include "kernels/kernel.h"

namespace hcops {

const KernelSet &kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return kernels::avx512::set;
    case Isa::avx2: return kernels::avx2::set;
    default: return kernels::generic::set;
  }
}

}  // namespace hcops
