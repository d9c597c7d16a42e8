// The output operations (bias, activation) on the avx512 family (built with its
// -m flags into libops_avx512).
// GCC 12 warns that the intrinsics' _mm512_undefined_ps() pass-through is
// "used uninitialized" once inlined: a false positive of its headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "kernels/avx512/vec.h"
#include "ops/output_ops_impl.h"

namespace hcops::ops::avx512 {

void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  output::apply<kernels::avx512::F32>(ops, c, ldc, i0, m, j0, n);
}

}  // namespace hcops::ops::avx512
