// LayerNorm: native_layer_norm and native_layer_norm_backward (layer_norm
// itself is CompositeImplicitAutograd and calls them). The fast path takes
// f32 and bf16 inputs that are dense, normalized over their trailing
// dimensions, with weight and bias (each optional) dense, of the input's
// dtype and of the normalized shape. PyTorch 1.13 rejects bf16 inputs with
// f32 parameters, so those go to its kernel and keep its error. mean and
// rstd are saved as PyTorch saves them: the input's dtype, shape
// input.shape[:axis] + [1] * len(normalized_shape).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#include <ATen/ops/native_layer_norm_cpu_dispatch.h>
#include <ATen/ops/native_layer_norm_backward_cpu_dispatch.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

#include "ops/layer_norm.h"
#include "ops/transpose.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

namespace {

using Tensors = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

bool defined(const c10::optional<at::Tensor> &t) { return t.has_value() && t->defined(); }

// rows x cols with cols the product of the normalized (trailing) sizes;
// nullopt when normalized_shape is not input's trailing shape (PyTorch's
// error) or is symbolic.
struct Geometry {
  int64_t rows, cols;
  size_t axis;  // the first normalized dimension
};

std::optional<Geometry> geometry(const at::Tensor &input, c10::SymIntArrayRef normalized_shape) {
  const auto shape = c10::asIntArrayRefSlowOpt(normalized_shape);
  if (!shape || shape->empty() || shape->size() > size_t(input.dim())) return std::nullopt;
  const size_t axis = input.dim() - shape->size();
  if (!input.sizes().slice(axis).equals(*shape)) return std::nullopt;
  int64_t cols = 1;
  for (int64_t s : *shape) cols *= s;
  return Geometry{input.numel() / std::max<int64_t>(cols, 1), cols, axis};
}

// A weight or bias the kernels read: absent, or dense of the input's dtype
// and of the normalized shape.
const char *param_reason(const c10::optional<at::Tensor> &p, const at::Tensor &input, const Geometry &g) {
  if (!defined(p)) return nullptr;
  if (p->scalar_type() != input.scalar_type()) return "param_dtype";
  if (!p->sizes().equals(input.sizes().slice(g.axis))) return "param_shape";
  if (!p->is_contiguous()) return "non_contiguous";
  return nullptr;
}

// An input the kernels read in place with its rows and columns swapped
// (ops/layer_norm.h's _swapped calls): its last two dimensions swapped from
// a dense tensor's (fast_path.h's swapped_dense), normalized over the last
// alone. DiT's residual stream under PyTorch 2.x is one at every LayerNorm.
bool reads_swapped(const at::Tensor &t, c10::SymIntArrayRef normalized_shape) {
  return fast_dtype(t.scalar_type()) && t.layout() == at::kStrided && t.dim() >= 2 && t.numel() > 0 &&
         normalized_shape.size() == 1 && !t.is_contiguous() && swapped_dense(t);
}

const char *common_reason(const at::Tensor &input, const std::optional<Geometry> &g,
                          const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
                          bool swapped) {
  if (const char *r = switch_reason()) return r;
  if (const char *r = swapped ? nullptr : dense_reason(input)) return r;
  if (!g) return "normalized_shape";
  if (const char *r = param_reason(weight, input, *g)) return r;
  return param_reason(bias, input, *g);
}

template <class T>
const T *param_data(const c10::optional<at::Tensor> &p) {
  return defined(p) ? data_as<T>(*p) : nullptr;
}

std::vector<int64_t> stat_shape(const at::Tensor &input, size_t axis) {
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().begin() + axis);
  shape.resize(input.dim(), 1);
  return shape;
}

// A strided input of the kernels' dtypes as PyTorch's own kernel takes it
// (X = input.expect_contiguous()): a contiguous copy, the output contiguous.
// DiT's residual stream is one under 2.x (channels-last from the patch
// embedding's transpose, kept by the elementwise ops): a tensor whose last
// two dimensions are swapped from a contiguous one is copied by blocks
// transposed in registers (ops/transpose.h). (As an input it is read in
// place instead, reads_swapped(); this copies such a gradient.)
at::Tensor dense(const at::Tensor &t) {
  if (!fast_dtype(t.scalar_type()) || t.layout() != at::kStrided || t.is_contiguous()) return t;
  if (!swapped_dense(t)) return t.contiguous();
  at::Tensor out = at::empty_like(t, at::MemoryFormat::Contiguous);
  const int64_t rows = t.size(-2), cols = t.size(-1), tiles = (rows + ops::kTransposeTile - 1) / ops::kTransposeTile;
  const int64_t batches = rows * cols != 0 ? t.numel() / (rows * cols) : 0;
  with_fast_type(t.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    const T *src = data_as<T>(t);
    T *dst = data_as<T>(out);
    // Units of one tile-row of one matrix: (batch, rows r0..r0 + tile).
    split(batches * tiles, std::max<int64_t>(1, kGrainElements / (ops::kTransposeTile * cols)),
          [&](int64_t u0, int64_t u1) {
            for (int64_t u = u0; u < u1; ++u) {
              const int64_t b = u / tiles, r0 = u % tiles * ops::kTransposeTile;
              const int64_t n = std::min(ops::kTransposeTile, rows - r0);
              ops::transpose(src + b * rows * cols + r0, rows, dst + b * rows * cols + r0 * cols, cols, n, cols);
            }
          });
  });
  return out;
}

// Rows [r0, r1) of a swapped input of T rows a batch, in pieces that each
// lie in one batch: fn(batch, its first row in the batch, rows, the first
// row's index over all rows). The kernels read one batch's matrix at a time
// (row i's element j at x[i + j * T]).
template <class Fn>
void batch_pieces(int64_t r0, int64_t r1, int64_t T, const Fn &fn) {
  for (int64_t i = r0; i < r1;) {
    const int64_t b = i / T, first = i % T, n = std::min(r1 - i, T - first);
    fn(b, first, n, i);
    i += n;
  }
}

Tensors layer_norm(const at::Tensor &strided_input, c10::SymIntArrayRef normalized_shape,
                   const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias, double eps) {
  // Read in place when swapped; otherwise one copy, checked and computed on.
  const bool swapped = reads_swapped(strided_input, normalized_shape);
  const at::Tensor input = swapped ? strided_input : dense(strided_input);
  const auto g = geometry(input, normalized_shape);
  if (const char *why = common_reason(input, g, weight, bias, swapped)) {
    fall_back(Op::layer_norm, strided_input, why);
    return at::cpu::native_layer_norm_symint(strided_input, normalized_shape, weight, bias, eps);
  }
  const auto f32 = input.options().dtype(at::kFloat);
  at::Tensor out = at::empty_like(input, at::MemoryFormat::Contiguous);
  at::Tensor mean = at::empty({g->rows}, f32), rstd = at::empty({g->rows}, f32);
  const int64_t cols = g->cols;
  std::string details = "normalized=" + shape_name(input.sizes().slice(g->axis));
  if (swapped) details += ",input=swapped";
  run_taken(Op::layer_norm, input, details, [&] {
    int threads = 1;
    with_fast_type(input.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *x = data_as<T>(input), *gamma = param_data<T>(weight), *beta = param_data<T>(bias);
      T *y = data_as<T>(out);
      float *m = mean.data_ptr<float>(), *r = rstd.data_ptr<float>();
      if (swapped) {
        // Chunks of about kGrainElements elements, in whole bands of the kernels' transposing copy.
        const int64_t T = input.size(-2), band = ops::kTransposeTile;
        threads = split(g->rows, (row_grain(cols) + band - 1) / band * band, [&](int64_t b0, int64_t e0) {
          batch_pieces(b0, e0, T, [&](int64_t b, int64_t first, int64_t n, int64_t row) {
            ops::layer_norm_forward_swapped(x + b * T * cols + first, T, gamma, beta, y + row * cols, m + row, r + row,
                                            n, cols, static_cast<float>(eps));
          });
        });
        return;
      }
      threads = split(g->rows, row_grain(cols), [&](int64_t b, int64_t e) {
        ops::layer_norm_forward(x + b * cols, gamma, beta, y + b * cols, m + b, r + b, e - b, cols,
                                static_cast<float>(eps));
      });
    });
    return threads;
  });
  const auto shape = stat_shape(input, g->axis);
  return {out, mean.to(input.scalar_type()).view(shape), rstd.to(input.scalar_type()).view(shape)};
}

// mean or rstd as the forward saved them: one value per row, of the
// input's dtype. PyTorch 1.13's kernel rejects any other ("expected scalar
// type BFloat16 but found Float" for f32 statistics of a bf16 input), so
// those go to it and raise there.
const char *stat_reason(const at::Tensor &s, const at::Tensor &input, const Geometry &g) {
  if (s.scalar_type() != input.scalar_type()) return "stat_dtype";
  if (s.numel() != g.rows) return "stat_shape";
  return nullptr;
}

Tensors layer_norm_backward(const at::Tensor &strided_grad_out, const at::Tensor &strided_input,
                            c10::SymIntArrayRef normalized_shape, const at::Tensor &mean, const at::Tensor &rstd,
                            const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
                            std::array<bool, 3> output_mask) {
  // As PyTorch's kernel: X and dY contiguous (copies of strided ones), but
  // a swapped X read in place.
  const bool swapped = reads_swapped(strided_input, normalized_shape);
  const at::Tensor input = swapped ? strided_input : dense(strided_input), grad_out = dense(strided_grad_out);
  const auto g = geometry(input, normalized_shape);
  const char *why = common_reason(input, g, weight, bias, swapped);
  if (!why) why = paired_reason(grad_out, input);
  if (!why) why = stat_reason(mean, input, *g);
  if (!why) why = stat_reason(rstd, input, *g);
  // A parameter gradient asked for without its parameter is PyTorch's to handle.
  if (!why && ((output_mask[1] && !defined(weight)) || (output_mask[2] && !defined(bias)))) why = "output_mask";
  if (why) {
    fall_back(Op::layer_norm_backward, input, why);
    return at::cpu::native_layer_norm_backward_symint(strided_grad_out, strided_input, normalized_shape, mean, rstd,
                                                      weight, bias, output_mask);
  }
  const int64_t rows = g->rows, cols = g->cols;
  const at::Tensor mean32 = mean.to(at::kFloat).contiguous(), rstd32 = rstd.to(at::kFloat).contiguous();
  at::Tensor dx;
  if (output_mask[0]) dx = at::empty_like(input, at::MemoryFormat::Contiguous);
  // The rows split into blocks, each with its own f32 accumulators for the
  // parameter gradients, summed afterwards in block order; handed out
  // dynamically (split()). Their number depends on the shape alone, so the
  // gradients' bits do not depend on the threads (fitted to the cores the
  // process gets: common/contention.h).
  constexpr int64_t kMaxBlocks = 64;
  const int64_t blocks = std::clamp<int64_t>((rows + row_grain(cols) - 1) / row_grain(cols), 1, kMaxBlocks);
  const auto f32 = input.options().dtype(at::kFloat);
  at::Tensor dgamma_acc, dbeta_acc;
  if (output_mask[1]) dgamma_acc = at::zeros({blocks, cols}, f32);
  if (output_mask[2]) dbeta_acc = at::zeros({blocks, cols}, f32);
  std::string details = "normalized=" + shape_name(input.sizes().slice(g->axis)) + ",mask=";
  for (bool b : output_mask) details += b ? '1' : '0';
  if (swapped) details += ",input=swapped";
  const int64_t batch_rows = swapped ? input.size(-2) : 0;
  run_taken(Op::layer_norm_backward, input, details, [&] {
    int threads = 1;
    with_fast_type(input.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const T *dy = data_as<T>(grad_out), *x = data_as<T>(input), *gamma = param_data<T>(weight);
      T *dxp = dx.defined() ? data_as<T>(dx) : nullptr;
      const float *m = mean32.data_ptr<float>(), *r = rstd32.data_ptr<float>();
      float *dg = dgamma_acc.defined() ? dgamma_acc.data_ptr<float>() : nullptr;
      float *db = dbeta_acc.defined() ? dbeta_acc.data_ptr<float>() : nullptr;
      threads = split(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t r0 = rows * blk / blocks, r1 = rows * (blk + 1) / blocks;
          float *dgb = dg ? dg + blk * cols : nullptr, *dbb = db ? db + blk * cols : nullptr;
          if (!swapped) {
            ops::layer_norm_backward(dy + r0 * cols, x + r0 * cols, m + r0, r + r0, gamma,
                                     dxp ? dxp + r0 * cols : nullptr, dgb, dbb, r1 - r0, cols);
            continue;
          }
          // The block's rows batch by batch, in row order into the same
          // accumulators: the same bits as on a contiguous X.
          batch_pieces(r0, r1, batch_rows, [&](int64_t b, int64_t first, int64_t n, int64_t i) {
            ops::layer_norm_backward_swapped(dy + i * cols, x + b * batch_rows * cols + first, batch_rows, m + i,
                                             r + i, gamma, dxp ? dxp + i * cols : nullptr, dgb, dbb, n, cols);
          });
        }
      });
    });
    return threads;
  });
  at::Tensor dgamma, dbeta;
  if (output_mask[1]) dgamma = dgamma_acc.sum(0).to(weight->scalar_type()).view(weight->sizes());
  if (output_mask[2]) dbeta = dbeta_acc.sum(0).to(bias->scalar_type()).view(bias->sizes());
  return {dx, dgamma, dbeta};
}

}  // namespace

void register_layer_norm(torch::Library &m) {
  if (!group_selected(OpGroup::layer_norm)) return;
#if HCOPS_TORCH_MAJOR >= 2
  // 2.x: a finite row whose variance overflows f32 has rstd 0 (1.13: NaN).
  ops::set_variance_overflow(ops::VarianceOverflow::zero_rstd);
#endif
  override_kernel(m, "native_layer_norm", TORCH_FN(layer_norm));
  override_kernel(m, "native_layer_norm_backward", TORCH_FN(layer_norm_backward));
}

}  // namespace hcops::torch_ops
