// The output operations (ops/output_ops.h): on the chosen family's table
// (ops/family.h), and wrapped as a GEMM epilogue.
#include "ops/output_ops.h"

#include "ops/family.h"

namespace hcops::ops {

void apply_output_ops(const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n) {
  ops_table().apply_output_ops(ops, c, ldc, i0, m, j0, n);
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
