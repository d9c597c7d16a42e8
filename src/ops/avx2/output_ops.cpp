// The output operations (bias, activation) on the avx2 family (built with its
// -m flags into libops_avx2).
#include "kernels/avx2/vec.h"
#include "ops/output_ops_impl.h"

namespace hcops::ops::avx2 {

void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  output::apply<kernels::avx2::F32>(ops, c, ldc, i0, m, j0, n);
}

}  // namespace hcops::ops::avx2
