// Softmax and LogSoftmax, forward and backward, with their out= overloads.
// The fast path takes f32 and bf16 tensors that are dense, over their last
// dimension (after wrapping a negative dim), in the input's own dtype
// (half_to_float and a different input_dtype go to PyTorch, as does
// everything else).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#include <ATen/ops/_log_softmax_cpu_dispatch.h>
#include <ATen/ops/_log_softmax_backward_data_cpu_dispatch.h>
#include <ATen/ops/_softmax_cpu_dispatch.h>
#include <ATen/ops/_softmax_backward_data_cpu_dispatch.h>
#include <torch/library.h>

#include "ops/softmax.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

namespace {

// Whether dim (possibly negative) names the last dimension; a bad dim is
// PyTorch's to report.
bool last_dim(const at::Tensor &t, int64_t dim) {
  const int64_t n = t.dim();
  if (n == 0 || dim < -n || dim >= n) return false;
  return (dim < 0 ? dim + n : dim) == n - 1;
}

const char *forward_reason(const at::Tensor &self, int64_t dim, bool half_to_float) {
  if (const char *r = switch_reason()) return r;
  if (half_to_float) return "half_to_float";
  if (const char *r = dense_reason(self)) return r;
  if (!last_dim(self, dim)) return "dim";
  return nullptr;
}

const char *backward_reason(const at::Tensor &grad_output, const at::Tensor &output, int64_t dim,
                            at::ScalarType input_dtype) {
  if (const char *r = switch_reason()) return r;
  if (const char *r = dense_reason(output)) return r;
  if (input_dtype != output.scalar_type()) return "input_dtype";
  if (const char *r = paired_reason(grad_output, output)) return r;
  if (!last_dim(output, dim)) return "dim";
  return nullptr;
}

void forward(Op op, const at::Tensor &x, const at::Tensor &y, bool log) {
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  run_taken(op, x, "dim=-1", [&] {
    int threads = 1;
    with_fast_type(x.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *xp = data_as<T>(x);
      T *yp = data_as<T>(y);
      threads = split(rows, row_grain(cols), [&](int64_t b, int64_t e) {
        ops::softmax_forward(xp + b * cols, yp + b * cols, e - b, cols, log);
      });
    });
    return threads;
  });
}

void backward(Op op, const at::Tensor &dy, const at::Tensor &y, const at::Tensor &dx, bool log) {
  const int64_t cols = y.size(-1), rows = y.numel() / cols;
  run_taken(op, y, "dim=-1", [&] {
    int threads = 1;
    with_fast_type(y.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *dyp = data_as<T>(dy), *yp = data_as<T>(y);
      T *dxp = data_as<T>(dx);
      threads = split(rows, row_grain(cols), [&](int64_t b, int64_t e) {
        ops::softmax_backward(dyp + b * cols, yp + b * cols, dxp + b * cols, e - b, cols, log);
      });
    });
    return threads;
  });
}

// The same overloads for softmax (Log = false) and log_softmax (Log = true).
template <bool Log>
struct Softmax {
  static constexpr Op fwd = Log ? Op::log_softmax : Op::softmax;
  static constexpr Op bwd = Log ? Op::log_softmax_backward : Op::softmax_backward;

  static at::Tensor stock(const at::Tensor &self, int64_t dim, bool h) {
    return Log ? at::cpu::_log_softmax(self, dim, h) : at::cpu::_softmax(self, dim, h);
  }
  static at::Tensor &stock_out(const at::Tensor &self, int64_t dim, bool h, at::Tensor &out) {
    return Log ? at::cpu::_log_softmax_outf(self, dim, h, out) : at::cpu::_softmax_outf(self, dim, h, out);
  }
  static at::Tensor stock_backward(const at::Tensor &dy, const at::Tensor &y, int64_t dim, at::ScalarType t) {
    return Log ? at::cpu::_log_softmax_backward_data(dy, y, dim, t) : at::cpu::_softmax_backward_data(dy, y, dim, t);
  }
  static at::Tensor &stock_backward_out(const at::Tensor &dy, const at::Tensor &y, int64_t dim, at::ScalarType t,
                                        at::Tensor &dx) {
    return Log ? at::cpu::_log_softmax_backward_data_outf(dy, y, dim, t, dx)
               : at::cpu::_softmax_backward_data_outf(dy, y, dim, t, dx);
  }

  static at::Tensor op(const at::Tensor &self, int64_t dim, bool half_to_float) {
    if (const char *why = forward_reason(self, dim, half_to_float)) {
      fall_back(fwd, self, why);
      return stock(self, dim, half_to_float);
    }
    at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
    forward(fwd, self, out, Log);
    return out;
  }

  static at::Tensor &op_out(const at::Tensor &self, int64_t dim, bool half_to_float, at::Tensor &out) {
    const char *why = forward_reason(self, dim, half_to_float);
    if (!why) why = out_reason(out, self, false);
    if (why) {
      fall_back(fwd, self, why);
      return stock_out(self, dim, half_to_float, out);
    }
    forward(fwd, self, out, Log);
    return out;
  }

  static at::Tensor backward_op(const at::Tensor &grad_output, const at::Tensor &output, int64_t dim,
                                at::ScalarType input_dtype) {
    if (const char *why = backward_reason(grad_output, output, dim, input_dtype)) {
      fall_back(bwd, output, why);
      return stock_backward(grad_output, output, dim, input_dtype);
    }
    at::Tensor grad_input = at::empty_like(output, at::MemoryFormat::Contiguous);
    backward(bwd, grad_output, output, grad_input, Log);
    return grad_input;
  }

  static at::Tensor &backward_op_out(const at::Tensor &grad_output, const at::Tensor &output, int64_t dim,
                                     at::ScalarType input_dtype, at::Tensor &grad_input) {
    const char *why = backward_reason(grad_output, output, dim, input_dtype);
    if (!why) why = out_reason(grad_input, output, false);
    if (!why) why = out_reason(grad_input, grad_output, false);
    if (why) {
      fall_back(bwd, output, why);
      return stock_backward_out(grad_output, output, dim, input_dtype, grad_input);
    }
    backward(bwd, grad_output, output, grad_input, Log);
    return grad_input;
  }
};

}  // namespace

void register_softmax(torch::Library &m) {
  if (group_selected(OpGroup::softmax)) {
    using S = Softmax<false>;
    override_kernel(m, "_softmax", TORCH_FN(S::op));
    override_kernel(m, "_softmax.out", TORCH_FN(S::op_out));
    override_kernel(m, "_softmax_backward_data", TORCH_FN(S::backward_op));
    override_kernel(m, "_softmax_backward_data.out", TORCH_FN(S::backward_op_out));
  }
  if (group_selected(OpGroup::log_softmax)) {
    using L = Softmax<true>;
    override_kernel(m, "_log_softmax", TORCH_FN(L::op));
    override_kernel(m, "_log_softmax.out", TORCH_FN(L::op_out));
    override_kernel(m, "_log_softmax_backward_data", TORCH_FN(L::backward_op));
    override_kernel(m, "_log_softmax_backward_data.out", TORCH_FN(L::backward_op_out));
  }
}

}  // namespace hcops::torch_ops
