// The fused Adam step's dispatch: the scalars of this step, computed as
// torch/optim/adam.py and adamw.py compute them (Python floats: double),
// then the kernel of the chosen family.
#include "ops/adam.h"

#include <cmath>
#include <type_traits>

#include "ops/adam_impl.h"
#include "ops/family.h"

namespace hcops::ops {

namespace {

AdamScalars scalars_of(const AdamConfig &c) {
  AdamScalars s;
  s.beta1 = static_cast<float>(c.beta1);
  s.one_minus_beta1 = static_cast<float>(1 - c.beta1);
  s.beta2 = static_cast<float>(c.beta2);
  s.one_minus_beta2 = static_cast<float>(1 - c.beta2);
  s.weight_decay = static_cast<float>(c.weight_decay);
  s.decay = static_cast<float>(1 - c.lr * c.weight_decay);
  // Python's beta ** step and math.sqrt are libm's pow and sqrt on doubles.
  const double bias_correction1 = 1 - std::pow(c.beta1, c.step);
  const double bias_correction2 = 1 - std::pow(c.beta2, c.step);
  const double step_size = c.lr / bias_correction1;
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(c.eps);
  s.neg_step_size = static_cast<float>(-step_size);
  s.adamw = c.decoupled_weight_decay;
  s.l2 = !c.decoupled_weight_decay && c.weight_decay != 0;  // Adam: `if weight_decay != 0`
  s.amsgrad = c.amsgrad;
  s.maximize = c.maximize;
  s.lerp = c.lerp_exp_avg;
  // The weight as PyTorch's lerp takes a Python float (to f32), its
  // coefficient in f32 arithmetic.
  const float w = s.one_minus_beta1;
  s.lerp_from_end = !(std::fabs(w) < 0.5f);
  s.lerp_coeff = s.lerp_from_end ? w - 1.0f : w;
  return s;
}

template <typename T>
void run(T *param, const T *grad, T *exp_avg, T *exp_avg_sq, T *max_exp_avg_sq, int64_t n, const AdamConfig &c) {
  if (n <= 0) return;
  const AdamScalars s = scalars_of(c);
  if constexpr (std::is_same_v<T, float>)
    ops_table().adam_step_f32(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
  else
    ops_table().adam_step_bf16(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
}

}  // namespace

void adam_step(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, int64_t n,
               const AdamConfig &c) {
  run(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, c);
}

void adam_step(bf16 *param, const bf16 *grad, bf16 *exp_avg, bf16 *exp_avg_sq, bf16 *max_exp_avg_sq, int64_t n,
               const AdamConfig &c) {
  run(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, c);
}

}  // namespace hcops::ops
