// The fused Adam step (ops/adam_impl.h) on the avx2 family's vector traits.
#include "kernels/avx2/vec.h"
#include "ops/adam_impl.h"

namespace hcops::ops::avx2 {

void adam_step(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, int64_t n,
               const AdamScalars &s) {
  adam_step_impl<kernels::avx2::F32>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
}

void adam_step(bf16 *param, const bf16 *grad, bf16 *exp_avg, bf16 *exp_avg_sq, bf16 *max_exp_avg_sq, int64_t n,
               const AdamScalars &s) {
  adam_step_impl<kernels::avx2::F32>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
}

}  // namespace hcops::ops::avx2
