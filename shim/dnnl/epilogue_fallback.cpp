#include "shim/dnnl/epilogue_fallback.h"

#include <cmath>

namespace hcops::dnnl {

namespace {

float activation(const ops::OutputOps &o, float x) {
  switch (o.act) {
    case ops::Activation::none: return x;
    case ops::Activation::relu: return o.act_scale * (x > 0 ? x : o.act_alpha * x);
    case ops::Activation::gelu_tanh: {
      const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return o.act_scale * 0.5f * x * (1.0f + std::tanh(u));
    }
    case ops::Activation::gelu_erf: return o.act_scale * 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case ops::Activation::swish: return o.act_scale * x / (1.0f + std::exp(-o.act_alpha * x));
  }
  return x;
}

float bias_at(const ops::OutputOps &o, long i) {
  if (o.bias_type == Dtype::bf16) return static_cast<float>(static_cast<const bf16 *>(o.bias)[i]);
  return static_cast<const float *>(o.bias)[i];
}

template <typename C>
void apply(const ops::OutputOps &o, C *c, long ldc, long m, long n) {
  if (o.empty()) return;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      float x = static_cast<float>(c[i + j * ldc]);
      if (o.bias) x += o.bias_scale * bias_at(o, o.bias_along_rows ? i : j);
      c[i + j * ldc] = C(activation(o, x));
    }
}

}  // namespace

void apply_after(const ops::OutputOps &ops, float *c, long ldc, long m, long n) { apply(ops, c, ldc, m, n); }
void apply_after(const ops::OutputOps &ops, bf16 *c, long ldc, long m, long n) { apply(ops, c, ldc, m, n); }

}  // namespace hcops::dnnl
