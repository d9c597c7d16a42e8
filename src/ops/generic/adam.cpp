// The fused Adam step (ops/adam_impl.h) on the generic family's vector traits.
#include "kernels/generic/vec.h"
#include "ops/adam_impl.h"

namespace hcops::ops::generic {

void adam_step(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, int64_t n,
               const AdamScalars &s) {
  adam_step_impl<kernels::generic::F32>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
}

void adam_step(bf16 *param, const bf16 *grad, bf16 *exp_avg, bf16 *exp_avg_sq, bf16 *max_exp_avg_sq, int64_t n,
               const AdamScalars &s) {
  adam_step_impl<kernels::generic::F32>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
}

}  // namespace hcops::ops::generic
