// GeLU and SiLU: forward, backward, out= and in-place overloads. The fast
// path takes f32 and bf16 tensors that are dense and, for two operands, of
// the same dtype and shape; PyTorch's structured kernels take the rest
// (broadcasting, type promotion, strided views, other dtypes).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#include <ATen/ops/gelu_cpu_dispatch.h>
#include <ATen/ops/gelu_backward_cpu_dispatch.h>
#include <ATen/ops/silu_cpu_dispatch.h>
#include <ATen/ops/silu_backward_cpu_dispatch.h>
#include <torch/library.h>

#include <optional>

#include "ops/eltwise.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

namespace {

using ops::GeluApprox;

std::optional<GeluApprox> gelu_approx(c10::string_view a) {
  if (a == "none") return GeluApprox::none;
  if (a == "tanh") return GeluApprox::tanh;
  return std::nullopt;  // PyTorch's kernel raises its own error
}

std::string approx_details(c10::string_view a) { return "approximate=" + std::string(a.data(), a.size()); }

// y = f(x) on the fast path: x and y dense, same dtype and shape (y may be x).
template <class Kernel>
void unary(Op op, const at::Tensor &x, const at::Tensor &y, const std::string &details, const Kernel &kernel) {
  run_taken(op, x, details, [&] {
    int threads = 1;
    with_fast_type(x.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *xp = data_as<T>(x);
      T *yp = data_as<T>(y);
      threads = split(x.numel(), kGrainElements, [&](int64_t b, int64_t e) { kernel(xp + b, yp + b, e - b); });
    });
    return threads;
  });
}

// dx = f(dy, x) on the fast path.
template <class Kernel>
void binary(Op op, const at::Tensor &dy, const at::Tensor &x, const at::Tensor &dx, const std::string &details,
            const Kernel &kernel) {
  run_taken(op, x, details, [&] {
    int threads = 1;
    with_fast_type(x.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *dyp = data_as<T>(dy), *xp = data_as<T>(x);
      T *dxp = data_as<T>(dx);
      threads =
          split(x.numel(), kGrainElements, [&](int64_t b, int64_t e) { kernel(dyp + b, xp + b, dxp + b, e - b); });
    });
    return threads;
  });
}

const char *unary_reason(const at::Tensor &x) {
  if (const char *r = switch_reason()) return r;
  return dense_reason(x);
}

const char *binary_reason(const at::Tensor &dy, const at::Tensor &x) {
  if (const char *r = unary_reason(x)) return r;
  return paired_reason(dy, x);
}

const char *out_reason2(const at::Tensor &out, const at::Tensor &a, const at::Tensor &b) {
  if (const char *r = out_reason(out, a, true)) return r;
  return out_reason(out, b, true);
}

// --- GeLU ---

at::Tensor gelu(const at::Tensor &self, c10::string_view approximate) {
  const auto a = gelu_approx(approximate);
  const char *why = a ? unary_reason(self) : "approximate";
  if (why) {
    fall_back(Op::gelu, self, why);
    return at::cpu::gelu(self, approximate);
  }
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  unary(Op::gelu, self, out, approx_details(approximate),
        [&](auto *x, auto *y, int64_t n) { ops::gelu_forward(x, y, n, *a); });
  return out;
}

at::Tensor &gelu_out(const at::Tensor &self, c10::string_view approximate, at::Tensor &out) {
  const auto a = gelu_approx(approximate);
  const char *why = a ? unary_reason(self) : "approximate";
  if (!why) why = out_reason(out, self, true);
  if (why) {
    fall_back(Op::gelu, self, why);
    return at::cpu::gelu_outf(self, approximate, out);
  }
  unary(Op::gelu, self, out, approx_details(approximate),
        [&](auto *x, auto *y, int64_t n) { ops::gelu_forward(x, y, n, *a); });
  return out;
}

at::Tensor &gelu_inplace(at::Tensor &self, c10::string_view approximate) {
  const auto a = gelu_approx(approximate);
  const char *why = a ? unary_reason(self) : "approximate";
  if (why) {
    fall_back(Op::gelu, self, why);
    return at::cpu::gelu_(self, approximate);
  }
  unary(Op::gelu, self, self, approx_details(approximate),
        [&](auto *x, auto *y, int64_t n) { ops::gelu_forward(x, y, n, *a); });
  return self;
}

at::Tensor gelu_backward(const at::Tensor &grad_output, const at::Tensor &self, c10::string_view approximate) {
  const auto a = gelu_approx(approximate);
  const char *why = a ? binary_reason(grad_output, self) : "approximate";
  if (why) {
    fall_back(Op::gelu_backward, self, why);
    return at::cpu::gelu_backward(grad_output, self, approximate);
  }
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  binary(Op::gelu_backward, grad_output, self, grad_input, approx_details(approximate),
         [&](auto *dy, auto *x, auto *dx, int64_t n) { ops::gelu_backward(dy, x, dx, n, *a); });
  return grad_input;
}

at::Tensor &gelu_backward_out(const at::Tensor &grad_output, const at::Tensor &self, c10::string_view approximate,
                              at::Tensor &grad_input) {
  const auto a = gelu_approx(approximate);
  const char *why = a ? binary_reason(grad_output, self) : "approximate";
  if (!why) why = out_reason2(grad_input, grad_output, self);
  if (why) {
    fall_back(Op::gelu_backward, self, why);
    return at::cpu::gelu_backward_outf(grad_output, self, approximate, grad_input);
  }
  binary(Op::gelu_backward, grad_output, self, grad_input, approx_details(approximate),
         [&](auto *dy, auto *x, auto *dx, int64_t n) { ops::gelu_backward(dy, x, dx, n, *a); });
  return grad_input;
}

// --- SiLU ---

at::Tensor silu(const at::Tensor &self) {
  if (const char *why = unary_reason(self)) {
    fall_back(Op::silu, self, why);
    return at::cpu::silu(self);
  }
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  unary(Op::silu, self, out, "", [](auto *x, auto *y, int64_t n) { ops::silu_forward(x, y, n); });
  return out;
}

at::Tensor &silu_out(const at::Tensor &self, at::Tensor &out) {
  const char *why = unary_reason(self);
  if (!why) why = out_reason(out, self, true);
  if (why) {
    fall_back(Op::silu, self, why);
    return at::cpu::silu_outf(self, out);
  }
  unary(Op::silu, self, out, "", [](auto *x, auto *y, int64_t n) { ops::silu_forward(x, y, n); });
  return out;
}

at::Tensor &silu_inplace(at::Tensor &self) {
  if (const char *why = unary_reason(self)) {
    fall_back(Op::silu, self, why);
    return at::cpu::silu_(self);
  }
  unary(Op::silu, self, self, "", [](auto *x, auto *y, int64_t n) { ops::silu_forward(x, y, n); });
  return self;
}

at::Tensor silu_backward(const at::Tensor &grad_output, const at::Tensor &self) {
  if (const char *why = binary_reason(grad_output, self)) {
    fall_back(Op::silu_backward, self, why);
    return at::cpu::silu_backward(grad_output, self);
  }
  at::Tensor grad_input = at::empty_like(self, at::MemoryFormat::Contiguous);
  binary(Op::silu_backward, grad_output, self, grad_input, "",
         [](auto *dy, auto *x, auto *dx, int64_t n) { ops::silu_backward(dy, x, dx, n); });
  return grad_input;
}

at::Tensor &silu_backward_out(const at::Tensor &grad_output, const at::Tensor &self, at::Tensor &grad_input) {
  const char *why = binary_reason(grad_output, self);
  if (!why) why = out_reason2(grad_input, grad_output, self);
  if (why) {
    fall_back(Op::silu_backward, self, why);
    return at::cpu::silu_backward_outf(grad_output, self, grad_input);
  }
  binary(Op::silu_backward, grad_output, self, grad_input, "",
         [](auto *dy, auto *x, auto *dx, int64_t n) { ops::silu_backward(dy, x, dx, n); });
  return grad_input;
}

}  // namespace

void register_eltwise(torch::Library &m) {
  if (group_selected(OpGroup::gelu)) {
    override_kernel(m, "gelu", TORCH_FN(gelu));
    override_kernel(m, "gelu.out", TORCH_FN(gelu_out));
    override_kernel(m, "gelu_", TORCH_FN(gelu_inplace));
    override_kernel(m, "gelu_backward", TORCH_FN(gelu_backward));
    override_kernel(m, "gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
  }
  if (group_selected(OpGroup::silu)) {
    override_kernel(m, "silu", TORCH_FN(silu));
    override_kernel(m, "silu.out", TORCH_FN(silu_out));
    override_kernel(m, "silu_", TORCH_FN(silu_inplace));
    override_kernel(m, "silu_backward", TORCH_FN(silu_backward));
    override_kernel(m, "silu_backward.grad_input", TORCH_FN(silu_backward_out));
  }
}

}  // namespace hcops::torch_ops
