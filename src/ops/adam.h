// One Adam / AdamW step over a parameter in a single pass over param, grad,
// exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad), f32 arithmetic on
// f32 or bf16 tensors, with the options and the order of operations of
// torch.optim.Adam / AdamW (single-tensor, non-capturable). Serial over its n
// elements: the framework layer splits a tensor across its own threads.
#pragma once

#include "common/api.h"
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

struct AdamConfig {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled_weight_decay;  // AdamW: param *= 1 - lr * weight_decay
  bool amsgrad;                 // max_exp_avg_sq kept and used
  bool maximize;                // ascend: the gradient's sign flipped
  double step;                  // this step's number, counted from 1
  // PyTorch 2.x's order: exp_avg.lerp_(grad, 1 - beta1) (1.13: mul_ then add_).
  bool lerp_exp_avg = false;
};

void adam_step(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, int64_t n,
               const AdamConfig &c);
void adam_step(bf16 *param, const bf16 *grad, bf16 *exp_avg, bf16 *exp_avg_sq, bf16 *max_exp_avg_sq, int64_t n,
               const AdamConfig &c);

}  // namespace hcops::ops
HCOPS_API_END
