// The fused Adam / AdamW step on a family's vector traits (kernels/<family>/vec.h),
// instantiated once per family by ops/family_table.cpp and chosen by ops/adam.cpp.
//
// The order of operations is PyTorch 1.13's _single_tensor_adam / _single_tensor_adamw
// (non-capturable) on f32 tensors, op by op, each result rounded to f32 where PyTorch
// stores it, so that the avx2 and avx512 families agree bitwise with stock PyTorch
// (whose CPU kernels, AVX2 with FMA here, fuse `add(alpha)` and `addcmul`):
//   g  = maximize ? -grad : grad
//   g  = fma(param, wd, g)                       Adam with weight_decay: grad.add(param, alpha=wd)
//   p  = p * (1 - lr*wd)                         AdamW: param.mul_(1 - lr*wd)
//   m  = fma(g, 1-beta1, m*beta1)                exp_avg.mul_(beta1).add_(grad, alpha=1-beta1)
//        (PyTorch 2.x, lerp: exp_avg.lerp_(grad, 1-beta1): fma(w, g - m, m), w = 1-beta1 < 0.5)
//   v  = fma((1-beta2)*g, g, v*beta2)            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1-beta2)
//   vm = maximum(vmax, v)  (NaN if either)       amsgrad: torch.maximum(max_exp_avg_sq, exp_avg_sq, out=...)
//   d  = sqrt(vm or v) / bias_correction2_sqrt + eps
//   p  = p + (-step_size * m) / d                param.addcdiv_(exp_avg, denom, value=-step_size)
// The generic family has no FMA instruction: its traits' fma is libm's, rounded once
// like the others, so every family agrees with PyTorch bit for bit.
// bf16 tensors are widened to f32, computed as above, and rounded once on store.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "ops/vmath.h"

namespace hcops::ops {

// The step's scalars, computed in double as torch/optim does in Python and
// converted to f32 as PyTorch's f32 kernels convert a Python scalar.
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float weight_decay;           // Adam's L2 term (used when l2)
  float decay;                  // AdamW's 1 - lr * weight_decay (used when adamw)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^step)
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^step)
  // PyTorch 2.x's exp_avg.lerp_(g, w = 1 - beta1), as its vectorised lerp:
  // fma(w, g - m, m) for |w| < 0.5, else fma(w - 1, g - m, g).
  float lerp_coeff;
  bool lerp, lerp_from_end;
  bool l2, adamw, amsgrad, maximize;
};

namespace adam_detail {

// f32 and bf16 data as the traits' f32 vectors.
template <class VT>
struct Io {
  using V = typename VT::V;
  using Mask = typename VT::Mask;
  static V load(const float *p) { return VT::loadu(p); }
  static V load(const float *p, Mask m) { return VT::loadu(p, m); }
  static void store(float *p, V v) { VT::storeu(p, v); }
  static void store(float *p, V v, Mask m) { VT::storeu(p, v, m); }
  static V load(const bf16 *p) { return VT::load_bf16(reinterpret_cast<const uint16_t *>(p)); }
  static V load(const bf16 *p, Mask m) { return VT::load_bf16(reinterpret_cast<const uint16_t *>(p), m); }
  static void store(bf16 *p, V v) { VT::store_bf16(reinterpret_cast<uint16_t *>(p), v); }
  static void store(bf16 *p, V v, Mask m) { VT::store_bf16(reinterpret_cast<uint16_t *>(p), v, m); }
};

using vmath::rounded;  // p * decay, rounded as PyTorch stores it before the add

// One vector of elements at i; Tail: the last n - i < lanes of them, masked.
template <class VT, bool Tail, class T>
inline void step_at(T *param, const T *grad, T *exp_avg, T *exp_avg_sq, T *max_exp_avg_sq, int64_t i,
                    typename VT::Mask m, const AdamScalars &s) {
  using IO = Io<VT>;
  using V = typename VT::V;
  auto load = [&](const T *p) { return Tail ? IO::load(p + i, m) : IO::load(p + i); };
  auto store = [&](T *p, V v) {
    if (Tail) IO::store(p + i, v, m);
    else IO::store(p + i, v);
  };
  V p = load(param);
  V g = load(grad);
  if (s.maximize) g = VT::mul(g, VT::set1(-1.0f));  // -grad exactly, zeros' signs included (0 - g is not)
  if (s.l2) g = VT::fma(p, VT::set1(s.weight_decay), g);
  if (s.adamw) p = rounded(VT::mul(p, VT::set1(s.decay)));
  V mo;
  if (s.lerp) {
    const V m0 = load(exp_avg);
    mo = VT::fma(VT::set1(s.lerp_coeff), VT::sub(g, m0), s.lerp_from_end ? g : m0);
  } else {
    mo = VT::fma(g, VT::set1(s.one_minus_beta1), VT::mul(load(exp_avg), VT::set1(s.beta1)));
  }
  V v = VT::fma(VT::mul(VT::set1(s.one_minus_beta2), g), g, VT::mul(load(exp_avg_sq), VT::set1(s.beta2)));
  store(exp_avg, mo);
  store(exp_avg_sq, v);
  if (s.amsgrad) {
    const V old = load(max_exp_avg_sq);
    v = VT::select(VT::isnan(old), old, VT::max(old, v));  // maxps gives v when either is NaN
    store(max_exp_avg_sq, v);
  }
  // bf16: the update uses the f32 moments, not their rounded stored values.
  V d = VT::add(VT::div(VT::sqrt(v), VT::set1(s.bias_correction2_sqrt)), VT::set1(s.eps));
  p = VT::add(p, VT::div(VT::mul(VT::set1(s.neg_step_size), mo), d));
  store(param, p);
}

}  // namespace adam_detail

// Serial over n elements; the framework layer splits a tensor across threads.
template <class VT, class T>
void adam_step_impl(T *param, const T *grad, T *exp_avg, T *exp_avg_sq, T *max_exp_avg_sq, int64_t n,
                    const AdamScalars &s) {
  int64_t i = 0;
  for (; i + VT::lanes <= n; i += VT::lanes)
    adam_detail::step_at<VT, false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, i, VT::mask(VT::lanes), s);
  if (i < n)
    adam_detail::step_at<VT, true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, i, VT::mask(int(n - i)), s);
}

}  // namespace hcops::ops
