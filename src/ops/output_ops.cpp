// The output operations (ops/output_ops.h): dispatched to the kernel family
// ops::family() chose, and wrapped as a GEMM epilogue.
#include "ops/output_ops.h"

#include "ops/family.h"

namespace hcops::ops {

namespace avx512 {
void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n);
}
namespace avx2 {
void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n);
}
namespace generic {
void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n);
}

void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  switch (family()) {
    case Family::avx512: return avx512::apply_output_ops(ops, c, ldc, i0, m, j0, n);
    case Family::avx2: return avx2::apply_output_ops(ops, c, ldc, i0, m, j0, n);
    case Family::generic: break;
  }
  generic::apply_output_ops(ops, c, ldc, i0, m, j0, n);
}

namespace {
void apply_epilogue(const void *ctx, float *c, long ldc, long i0, long m, long j0, long n) {
  apply_output_ops(*static_cast<const OutputOps *>(ctx), c, ldc, i0, m, j0, n);
}
}  // namespace

Epilogue<float> output_epilogue(const OutputOps &ops) {
  Epilogue<float> e;
  if (!ops.empty()) {
    e.apply = &apply_epilogue;
    e.ctx = &ops;
  }
  return e;
}

}  // namespace hcops::ops
