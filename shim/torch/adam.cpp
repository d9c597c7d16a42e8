// hcops::adam_step_: one fused Adam / AdamW step over a parameter group, for
// python/hcops/torch/optim.py, which calls it in place of
// torch.optim.adam(w)._single_tensor_adam(w) when every tensor qualifies.
// It increments the step tensors as PyTorch does, then runs the kernel
// (ops/adam.h) over all the group's elements at once, split (fast_path.h:
// shared dynamically over PyTorch's threads) over the concatenated element
// range, so that a group of many small tensors balances like one large
// tensor; serial inside a parallel region, as at::parallel_for is.
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gemm/team.h"
#include "ops/adam.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"
#include "shim/torch/report.h"
#include "shim/torch/selection.h"

namespace {

using hcops::ops::AdamConfig;
namespace torch_ops = hcops::torch_ops;

// Enough elements per task that a thread's start-up is small beside its work.
constexpr int64_t kGrain = 1 << 15;

// Python chose the fused path; a tensor it should not have sent is an error, not a wrong result.
void check_tensor(const at::Tensor &t, const at::Tensor &param, const char *what) {
  TORCH_CHECK(t.layout() == at::kStrided && t.device().is_cpu(), "hcops::adam_step_: ", what,
              " is not a dense CPU tensor");
  TORCH_CHECK(t.scalar_type() == param.scalar_type(), "hcops::adam_step_: ", what, " is ", t.scalar_type(),
              ", its parameter ", param.scalar_type());
  TORCH_CHECK(t.sizes() == param.sizes() && t.is_contiguous(), "hcops::adam_step_: ", what,
              " is not contiguous or not of its parameter's shape");
}

template <typename T>
T *ptr(const at::Tensor &t) {
  return reinterpret_cast<T *>(t.data_ptr());
}

template <typename T>
void run(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
         at::TensorList max_exp_avg_sqs, const std::vector<AdamConfig> &configs, const std::vector<int64_t> &start) {
  const int64_t total = start.back();
  const bool amsgrad = !max_exp_avg_sqs.empty();
  torch_ops::split(total, kGrain, [&](int64_t begin, int64_t end) {
    // The first tensor that holds element `begin`, then each one up to `end`.
    size_t i = std::upper_bound(start.begin(), start.end(), begin) - start.begin() - 1;
    for (; i < params.size() && start[i] < end; ++i) {
      const int64_t lo = std::max(begin, start[i]) - start[i];
      const int64_t hi = std::min(end, start[i + 1]) - start[i];
      if (hi <= lo) continue;
      hcops::ops::adam_step(ptr<T>(params[i]) + lo, ptr<T>(grads[i]) + lo, ptr<T>(exp_avgs[i]) + lo,
                            ptr<T>(exp_avg_sqs[i]) + lo, amsgrad ? ptr<T>(max_exp_avg_sqs[i]) + lo : nullptr, hi - lo,
                            configs[i]);
    }
  });
}

// The torch this library is built for orders Adam as 2.x does (exp_avg by lerp_).
#if HCOPS_TORCH_MAJOR >= 2
constexpr bool kTorch2 = true;
#else
constexpr bool kTorch2 = false;
#endif

void adam_step_(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr, double beta1, double beta2,
                double eps, double weight_decay, bool adamw, bool amsgrad, bool maximize) {
  const double t0 = torch_ops::timing() ? torch_ops::now_seconds() : 0;
  const size_t count = params.size();
  TORCH_CHECK(grads.size() == count && exp_avgs.size() == count && exp_avg_sqs.size() == count &&
                  state_steps.size() == count && max_exp_avg_sqs.size() == (amsgrad ? count : 0),
              "hcops::adam_step_: lists of different lengths");
  if (count == 0) return;
  const at::ScalarType dtype = params[0].scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kBFloat16, "hcops::adam_step_: parameters are ", dtype,
              ", not float32 or bfloat16");
  std::vector<AdamConfig> configs(count);
  std::vector<int64_t> start(count + 1, 0);
  // Every tensor checked before any step is counted: an error leaves the state as it was.
  for (size_t i = 0; i < count; ++i) {
    const at::Tensor &p = params[i];
    TORCH_CHECK(p.scalar_type() == dtype, "hcops::adam_step_: parameters of different dtypes");
    check_tensor(p, p, "a parameter");
    check_tensor(grads[i], p, "a gradient");
    check_tensor(exp_avgs[i], p, "exp_avg");
    check_tensor(exp_avg_sqs[i], p, "exp_avg_sq");
    if (amsgrad) check_tensor(max_exp_avg_sqs[i], p, "max_exp_avg_sq");
    const at::Tensor &step = state_steps[i];
    TORCH_CHECK(step.device().is_cpu() && step.numel() == 1,
                "hcops::adam_step_: a step is not a one-element CPU tensor");
  }
  for (size_t i = 0; i < count; ++i) {
    const at::Tensor &step = state_steps[i];
    // As `step_t += 1; step = step_t.item()`: the count in the step tensor's own dtype.
    at::Tensor(step).add_(1);
    configs[i] = AdamConfig{lr, beta1, beta2, eps, weight_decay, adamw, amsgrad, maximize, step.item<double>()};
    configs[i].lerp_exp_avg = kTorch2;
    start[i + 1] = start[i] + params[i].numel();
  }
  if (dtype == at::kFloat) run<float>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, configs, start);
  else run<hcops::bf16>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, configs, start);
  // PyTorch's in-place updates (param.addcdiv_, exp_avg.mul_, ...) bump the
  // tensors' version counters, which autograd checks: a backward through a
  // graph that saved a parameter updated since must fail as it does with
  // stock PyTorch, not run on the new values. A custom op's CPU kernel gets
  // no such bump from the dispatcher, so it is done here, as many times as
  // torch.optim's _single_tensor_adam(w) updates each tensor in place:
  // param.mul_ (AdamW's decay, even at weight_decay 0) and param.addcdiv_;
  // exp_avg.mul_().add_(); exp_avg_sq.mul_().addcmul_(); torch.maximum(out=).
  // PyTorch 2.x: param.mul_ only where weight_decay != 0, exp_avg.lerp_ once.
  const int param_bumps = adamw && (!kTorch2 || weight_decay != 0) ? 2 : 1;
  const std::pair<at::TensorList, int> bumps[] = {
      {params, param_bumps}, {exp_avgs, kTorch2 ? 1 : 2}, {exp_avg_sqs, 2}, {max_exp_avg_sqs, 1}};
  for (const auto &[list, times] : bumps)
    for (const at::Tensor &t : list)
      if (!t.is_inference())
        for (int k = 0; k < times; ++k) t.unsafeGetTensorImpl()->bump_version();
  const int threads = at::in_parallel_region() ? 1 : at::get_num_threads();
  // Between two training steps: where PyTorch's own team is fitted to the
  // cores the process gets (gemm/team.h).
  hcops::fit_runtime_team();
  const std::string shape = std::to_string(count) + " tensors " + std::to_string(start.back()) + " elements";
  const std::string details = std::string(adamw ? "adamw" : "adam") + " amsgrad=" + std::to_string(amsgrad) +
                              " maximize=" + std::to_string(maximize);
  torch_ops::report_taken(torch_ops::Op::adam_step, dtype == at::kFloat ? "f32" : "bf16", shape, threads,
                          torch_ops::timing() ? torch_ops::now_seconds() - t0 : 0, details);
}

// A group python/hcops/torch/optim.py left to PyTorch's function, and why:
// counted and reported as the aten overrides' fallbacks are.
void adam_fallback(std::string kind, std::string reason, std::string dtype, int64_t tensors) {
  torch_ops::report_fallback(torch_ops::Op::adam_step, dtype.c_str(), std::to_string(tensors) + " tensors " + kind,
                             reason.c_str());
}

// Whether HCOPS_OPS selects the adam (adamw) group: python/hcops/torch/optim.py installs what it selects.
bool adam_selected(bool adamw) {
  return torch_ops::group_selected(adamw ? torch_ops::OpGroup::adamw : torch_ops::OpGroup::adam);
}

}  // namespace

namespace hcops::torch_ops {

void register_adam(torch::Library &m) {
  m.def(
      "adam_step_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
      "Tensor(d!)[] max_exp_avg_sqs, Tensor(e!)[] state_steps, float lr, float beta1, float beta2, float eps, "
      "float weight_decay, bool adamw, bool amsgrad, bool maximize) -> ()");
  m.impl("adam_step_", c10::DispatchKey::CPU, TORCH_FN(adam_step_));
  m.def("adam_selected(bool adamw) -> bool", &adam_selected);
  m.def("adam_fallback(str kind, str reason, str dtype, int tensors) -> ()", &adam_fallback);
}

}  // namespace hcops::torch_ops
