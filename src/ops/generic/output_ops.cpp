// The output operations (bias, activation) on the generic family (built with its
// -m flags into libops_generic).
#include "kernels/generic/vec.h"
#include "ops/output_ops_impl.h"

namespace hcops::ops::generic {

void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  output::apply<kernels::generic::F32>(ops, c, ldc, i0, m, j0, n);
}

}  // namespace hcops::ops::generic
