// aten::add.Tensor (alpha 1) and aten::mul.Tensor of f32 and bf16 tensors,
// mixed or not, with PyTorch's type promotion (f32 if either operand is),
// on ops::binary_rows: one pass that widens a bf16 operand as it reads it.
// A DiT step under autocast adds and multiplies its f32 residual stream and
// adaLN's f32 modulation with bf16 Linear outputs (x + gate * attn(..),
// x * (1 + scale) + shift), where PyTorch's TensorIterator casts the bf16
// operand in a pass of its own: an (8, 256, 384) f32 + bf16 add took 0.87 ms
// (Xeon, AMX, 2 threads), three times a same-dtype one. The results are
// PyTorch's bit for bit (the sum or product in f32, rounded once into a
// bf16 result).
//
// Taken: both operands of rank >= 1 (a 0-dim tensor promotes as a number), f32
// or bf16, at least kMinRowElements (fast_path.h), alpha 1, each operand
// either of the result's shape or broadcast over a run of its middle
// dimensions ((B, 1, C) or (C) against (B, T, C)), its last dimension
// contiguous and its rows evenly spaced, at least a row apart (contiguous, or
// rows of a wider tensor), rows of at least kMinRowCols; or both of the
// result's shape, dense, one or both with the last two dimensions swapped
// (swapped_rows: DiT's residual stream). (This wheel has no
// named tensors: PyTorch 2.15 removed them.) PyTorch's kernel runs the rest,
// with the reason under HCOPS_VERBOSE. The operators are replaced from PyTorch
// 2.x on (the 1.13 build registers none).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#if HCOPS_TORCH_MAJOR >= 2  // the operators of 2.x
#include <ATen/ops/add_cpu_dispatch.h>
#include <ATen/ops/mul_cpu_dispatch.h>
#endif
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <cstring>

#include "ops/eltwise.h"
#include "ops/transpose.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

#if HCOPS_TORCH_MAJOR >= 2

namespace {

// Where operand t's rows are for the result's (sizes `out`, rows of its
// last dimension): row r of the result takes t's row r / every, at
// r / every * ld. every = 1 when t has the result's shape, k when each row
// of t serves k consecutive rows of the result (t's sizes the result's with
// dimensions i..n-2 set to 1, missing leading dimensions counting as 1).
// t's last dimension must be contiguous and its rows evenly spaced (a
// contiguous tensor, or rows of a wider one: adaLN's chunks). Null when
// taken, else the reason PyTorch's kernel runs.
struct RowLayout {
  int64_t every = 1, ld = 0;
};
const char *row_layout(const at::Tensor &t, at::IntArrayRef out, RowLayout *l) {
  const int64_t n = int64_t(out.size()), lead = n - t.dim();
  auto size = [&](int64_t d) { return d < lead ? 1 : t.size(d - lead); };
  if (size(n - 1) != out[n - 1]) return "broadcast";
  int64_t d = n - 2, every = 1;
  while (d >= 0 && size(d) == 1 && out[d] != 1) every *= out[d--];
  // Dimensions 0..d: the result's sizes, collapsing into rows ld apart.
  const char *layout = out[n - 1] > 1 && t.stride(t.dim() - 1) != 1 ? "non_contiguous" : nullptr;
  int64_t ld = out[n - 1], span = 0;  // span: the next outer dimension's stride, once one is seen
  bool first = true;
  for (; d >= 0; --d) {
    if (size(d) != out[d]) return "broadcast";
    if (size(d) == 1) continue;
    const int64_t stride = t.stride(d - lead);
    if (first) ld = stride, first = false;
    else if (stride != span) layout = "non_contiguous";
    span = stride * size(d);
  }
  // Rows that overlap (expanded, stride 0; unfolded) would make PyTorch
  // choose another layout for the result.
  if (!first && ld < out[n - 1]) layout = "non_contiguous";
  *l = RowLayout{every, ld};
  return layout;
}

// Operands of the result's shape, each dense either contiguous or with its
// last two dimensions swapped, not both contiguous (the rows' case): DiT's
// residual stream under PyTorch 2.x keeps the patch embedding's transpose
// (strides (T C, 1, T)) through every elementwise op after it, and adding
// it to a contiguous (B, T, C) tensor (x + gate * attn(..), an f32 + bf16
// under autocast) goes through PyTorch's strided loop, 0.58-2.06 ms a call
// in DiT-S/2's bf16 step on Zen 4 against a memory bound of 0.23 ms (here
// 0.33-0.93; per call, cold, 1.2-1.6x faster on 2 threads).
// The result has a's layout, as PyTorch gives it (a decides when its
// strides order the dimensions, which they do when the last two sizes
// exceed 1); in that layout's memory order a's rows are dense and b is
// either dense too or transposed in each batch of rows
// (ops::BinaryRows::y_batch_rows). Fills *args but for op, the pointers and
// the types, and *a_swapped (the result's layout). Null when taken, else
// the reason PyTorch's kernel runs: not
// this case ("non_contiguous"), or two f32 operands in different layouts,
// which PyTorch's loop adds as fast (0.46-0.50 ms a call in DiT-S/2's f32
// step, HCOps 0.47-0.90: it is slow only where it casts).
const char *swapped_rows(const at::Tensor &a, const at::Tensor &b, at::IntArrayRef shape, ops::BinaryRows *args,
                         bool *a_swapped) {
  const int64_t n = int64_t(shape.size());
  if (n < 2 || a.sizes() != shape || b.sizes() != shape || shape[n - 1] < 2 || shape[n - 2] < 2)
    return "non_contiguous";
  const bool a_sw = swapped_dense(a), b_sw = swapped_dense(b);
  if (!(a_sw || a.is_contiguous()) || !(b_sw || b.is_contiguous()) || (!a_sw && !b_sw)) return "non_contiguous";
  if (a_sw != b_sw && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat) return "swapped_f32";
  const int64_t t = shape[n - 2], c = shape[n - 1];
  const int64_t cols = a_sw ? t : c, batch_rows = a_sw ? c : t;
  args->cols = cols;
  args->x_every = args->y_every = 1;
  args->x_ld = args->y_ld = cols;
  if (a_sw != b_sw) {
    args->y_ld = batch_rows;
    args->y_batch_rows = batch_rows;
    args->y_batch_stride = t * c;
  }
  *a_swapped = a_sw;
  return nullptr;
}

const char *reason(const at::Tensor &a, const at::Tensor &b, const at::Scalar *alpha) {
  if (const char *r = switch_reason()) return r;
  if (!fast_dtype(a.scalar_type()) || !fast_dtype(b.scalar_type())) return "dtype";
  if (a.dim() == 0 || b.dim() == 0) return "scalar";
  if (a.layout() != at::kStrided || b.layout() != at::kStrided) return "layout";
  if (std::max(a.numel(), b.numel()) < kMinRowElements) return "small";
  // (A bool alpha PyTorch rejects with its own error.)
  if (alpha && (alpha->isComplex() || alpha->isBoolean() || alpha->toDouble() != 1.0)) return "alpha";
  return nullptr;
}

at::Tensor binary(Op op, ops::BinaryOp kind, const at::Tensor &a, const at::Tensor &b, const at::Scalar *alpha) {
  const char *why = reason(a, b, alpha);
  std::vector<int64_t> shape;
  RowLayout la, lb;
  ops::BinaryRows args{};
  bool swapped = false, out_swapped = false;
  if (!why) {
    shape = at::infer_size(a.sizes(), b.sizes());  // throws PyTorch's own error for shapes that do not broadcast
    why = row_layout(a, shape, &la);
    if (const char *r = row_layout(b, shape, &lb); !why || (r && std::strcmp(r, "broadcast") == 0)) why = r;
    if (why && std::strcmp(why, "non_contiguous") == 0) {
      why = swapped_rows(a, b, shape, &args, &out_swapped);
      swapped = !why;
    }
    if (!why && !swapped) args = ops::BinaryRows{kind, {}, {}, {}, nullptr, nullptr, nullptr, shape.back(),
                                                 la.every, lb.every, la.ld, lb.ld};
    if (!why && args.cols < kMinRowCols) why = "narrow";
  }
  if (why) {
    fall_back(op, a, why);
    return kind == ops::BinaryOp::add ? at::cpu::add(a, b, *alpha) : at::cpu::mul(a, b);
  }
  const bool f32 = a.scalar_type() == at::kFloat || b.scalar_type() == at::kFloat;
  const at::TensorOptions opts = a.options().dtype(f32 ? at::kFloat : at::kBFloat16);
  // Swapped: a's layout, its strides as they are (a dense a: PyTorch's
  // result has them, size-1 dimensions' strides included).
  const at::Tensor out = swapped ? at::empty_like(a, opts) : at::empty(shape, opts);
  const int64_t cols = args.cols, rows = out.numel() / cols;
  args.op = kind;
  args.x_type = dtype_of(a);
  args.y_type = dtype_of(b);
  args.out_type = dtype_of(out);
  args.x = a.data_ptr();
  args.y = b.data_ptr();
  args.out = out.data_ptr();
  auto details = [&] {
    return std::string(dtype_name(a.scalar_type())) + " " + shape_name(a.sizes()) + " " +
           (kind == ops::BinaryOp::add ? "+ " : "* ") + dtype_name(b.scalar_type()) + " " + shape_name(b.sizes()) +
           (!swapped            ? ""
            : args.y_batch_rows ? (out_swapped ? ", a's last two dimensions swapped, b transposed to them"
                                               : ", b's last two dimensions swapped, transposed to a's")
                                : ", both with the last two dimensions swapped");
  };
  // A transposed b is read in bands of up to a tile's rows within a batch:
  // threads split at multiples of the tile (whole bands when a batch's rows
  // are a multiple of it).
  const int64_t grain = args.y_batch_rows ? (row_grain(cols) + ops::kTransposeTile - 1) / ops::kTransposeTile *
                                                ops::kTransposeTile
                                          : row_grain(cols);
  run_taken(op, out, details,
            [&] { return split(rows, grain, [&](int64_t r0, int64_t r1) { ops::binary_rows(args, r0, r1); }); });
  return out;
}

at::Tensor add(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha) {
  return binary(Op::add, ops::BinaryOp::add, a, b, &alpha);
}
at::Tensor mul(const at::Tensor &a, const at::Tensor &b) { return binary(Op::mul, ops::BinaryOp::mul, a, b, nullptr); }

}  // namespace

void register_binary(torch::Library &m) {
  if (!group_selected(OpGroup::binary)) return;
  override_kernel(m, "add.Tensor", TORCH_FN(add));
  override_kernel(m, "mul.Tensor", TORCH_FN(mul));
}

#else

void register_binary(torch::Library &) {}  // 2.x only

#endif

}  // namespace hcops::torch_ops
