// The output operations (ops/output_ops.h): on the chosen family's table
// (ops/family.h), and wrapped as a GEMM epilogue.
#include "ops/output_ops.h"

#include <new>

#include "common/fault.h"
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

Epilogue<float> output_epilogue(const OutputOps &ops, long m, std::unique_ptr<float[]> &storage) {
  Epilogue<float> e = output_epilogue(ops);
  if (!ops.bias || !ops.bias_along_rows || ops.act != Activation::none || ops.bias_scale != 1.0f) return e;
  if (ops.bias_type == Dtype::f32) {
    e.row_bias = static_cast<const float *>(ops.bias);
    return e;
  }
  storage.reset(fault::allocation_fails() ? nullptr : new (std::nothrow) float[m]);
  if (!storage) return e;  // apply adds it
  const bf16 *b = static_cast<const bf16 *>(ops.bias);
  for (long i = 0; i < m; ++i) storage[i] = float(b[i]);
  e.row_bias = storage.get();
  return e;
}

}  // namespace hcops::ops
