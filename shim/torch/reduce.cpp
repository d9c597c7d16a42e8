// aten::sum.dim_IntList of f32 and bf16 tensors over a run of dimensions in
// front of the last ones, on ops::column_sums (ops/reduce.h): what autograd's
// sum_to issues for every broadcast operand of a DiT step. A Linear's bias
// gradient sums dY (T, C) over its rows, adaLN's modulation gradients sum
// (B, T, C) over T into (B, 1, C). PyTorch's own kernel summed a (2048,
// 1536) bf16 dY from memory at 6.7 GB/s on one thread, 12.9 on two (Zen 4;
// HCOps 13.0 and 16.6: doc/perf/torch2.md). The sums are f32 with a
// compensated total (ops/reduce.h bounds the error), a bf16 result rounded
// once, and do not depend on the number of threads; they are not PyTorch's
// bit for bit, whose summation order differs.
//
// Taken: an f32 or bf16 tensor of at least kMinRowElements (fast_path.h),
// dtype= absent or its own (or f32 for a bf16 tensor), the dimensions summed a run d0..d1
// with at least one dimension after it, the dimensions after it dense
// (strides of a contiguous block), the run's rows evenly spaced, the
// leading dimensions too, in row-major order without overlap (a contiguous
// tensor, or a slice of one). The result is contiguous, as PyTorch's is for
// such a tensor. PyTorch's kernel runs the rest (the last dimension summed,
// every dimension, transposed or permuted tensors, rows of fewer than
// kMinRowCols elements, other dtypes, empty tensors), with the reason under
// HCOPS_VERBOSE, and raises its own errors (dimensions out of range or
// repeated).
//
// A slice of many rows is summed in blocks of rows (kBlockRows or more,
// at most kMaxRowBlocks: their number depends on the shape alone, so the
// bits do not depend on the threads), each block's columns into partial
// sums, combined in block order (ops::combine_column_sums). The thread
// that sums a block then reads rows the operator before it left in its own
// cache: PyTorch's parallel_for gives thread t the t-th contiguous part of
// dY, and split() hands thread t the t-th run of the pieces first. DiT-S/2's
// f32 bias gradients on 2 threads of a Zen 4, dY just written, against the
// wheel's kernel (3 alternated runs each way): (2048, 384) 0.75-0.80x with
// column ranges alone, 1.01-1.11x in row blocks; (2048, 1536) 1.08-1.22x,
// 1.36-1.53x (doc/perf/torch2.md).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#if HCOPS_TORCH_MAJOR >= 2  // the operators of 2.x
#include <ATen/ops/sum_cpu_dispatch.h>
#endif
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "ops/reduce.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

#if HCOPS_TORCH_MAJOR >= 2

namespace {

// Columns per piece of a split: a piece's rows are read as runs of this
// many elements or more.
constexpr int64_t kMinPieceCols = 256;

// Rows per block of a slice summed in blocks, and the most blocks. Only
// fewer slices than that are cut (more give the threads their pieces
// already), and only while the partial sums stay within kMaxPartials
// floats each way.
constexpr int64_t kBlockRows = 256;
constexpr int64_t kMaxRowBlocks = 8;
constexpr int64_t kMaxPartials = int64_t(1) << 20;

struct SumLayout {
  int64_t outer = 1, rows = 1, cols = 1, ld = 0, ld_outer = 0;
  std::vector<int64_t> out_shape;
};

// The row blocks of each slice (1: the slice's columns summed whole).
int64_t row_blocks(const SumLayout &l) {
  if (l.outer >= kMaxRowBlocks) return 1;
  const int64_t blocks = std::clamp<int64_t>(l.rows / kBlockRows, 1, kMaxRowBlocks);
  return l.outer * blocks * l.cols <= kMaxPartials ? blocks : 1;
}

// Dimensions [a, b) of t collapsed into one of uniform stride: their element
// count, and the stride of the innermost dimension of more than one element
// (0 when there is none). Null when they do not collapse.
const char *collapse(const at::Tensor &t, int64_t a, int64_t b, int64_t *count, int64_t *stride) {
  *count = 1;
  *stride = 0;
  int64_t next = -1;  // the stride the next outer dimension must have
  for (int64_t d = b - 1; d >= a; --d) {
    if (t.size(d) == 1) continue;
    if (next >= 0 && t.stride(d) != next) return "non_contiguous";
    if (next < 0) *stride = t.stride(d);
    *count *= t.size(d);
    next = t.stride(d) * t.size(d);
  }
  return nullptr;
}

const char *layout(const at::Tensor &t, at::OptionalIntArrayRef dim, bool keepdim, SumLayout *l) {
  const int64_t n = t.dim();
  if (!dim || dim->empty()) return "all_dims";
  std::vector<bool> summed(n, false);
  for (int64_t d : *dim) {
    if (d < -n || d >= n) return "dim";  // PyTorch raises its own error
    const int64_t w = d < 0 ? d + n : d;
    if (summed[w]) return "dim";  // repeated: PyTorch's error too
    summed[w] = true;
  }
  const int64_t d0 = std::find(summed.begin(), summed.end(), true) - summed.begin();
  int64_t d1 = d0;
  while (d1 < n && summed[d1]) ++d1;
  if (std::find(summed.begin() + d1, summed.end(), true) != summed.end()) return "dims_not_adjacent";
  if (d1 == n) return "last_dim";
  // Row-major order without overlap: each dimension of more than one
  // element at least as far apart as the span of the ones after it.
  int64_t span = 1;
  for (int64_t d = n - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) < span) return "non_contiguous";
    span = t.stride(d) * t.size(d);
  }
  int64_t inner_stride;
  if (const char *r = collapse(t, d1, n, &l->cols, &inner_stride)) return r;
  if (l->cols > 1 && inner_stride != 1) return "non_contiguous";
  if (const char *r = collapse(t, d0, d1, &l->rows, &l->ld)) return r;
  if (const char *r = collapse(t, 0, d0, &l->outer, &l->ld_outer)) return r;
  if (l->cols < kMinRowCols) return "narrow";
  for (int64_t d = 0; d < n; ++d)
    if (!summed[d]) l->out_shape.push_back(t.size(d));
    else if (keepdim) l->out_shape.push_back(1);
  return nullptr;
}

const char *reason(const at::Tensor &t, std::optional<at::ScalarType> dtype) {
  if (const char *r = switch_reason()) return r;
  if (!fast_dtype(t.scalar_type())) return "dtype";
  if (dtype && *dtype != t.scalar_type() && !(t.scalar_type() == at::kBFloat16 && *dtype == at::kFloat))
    return "out_dtype";
  if (t.layout() != at::kStrided) return "layout";
  if (t.numel() == 0) return "empty";
  if (t.numel() < kMinRowElements) return "small";
  return nullptr;
}

at::Tensor sum(const at::Tensor &t, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  SumLayout l;
  const char *why = reason(t, dtype);
  if (!why) why = layout(t, dim, keepdim, &l);
  if (why) {
    fall_back(Op::sum, t, why);
    return at::cpu::sum(t, dim, keepdim, dtype);
  }
  const at::ScalarType out_type = dtype ? *dtype : t.scalar_type();
  at::Tensor out = at::empty(l.out_shape, t.options().dtype(out_type));
  const ops::ColumnSums s{dtype_of(t), dtype_of(out), t.data_ptr(), out.data_ptr(), l.rows, l.cols, l.ld, l.ld_outer};
  const int64_t blocks = row_blocks(l);
  // Pieces: (slice, row block, column range), in that order. Each slice's
  // blocks are cut into column ranges when there are fewer blocks than
  // threads: as many ranges as make a multiple of the threads (an even
  // share each), up to 4 a thread while a range keeps kMinPieceCols
  // columns, in whole runs of 16.
  const int threads = at::in_parallel_region() ? 1 : at::get_num_threads();
  const int64_t units = l.outer * blocks;
  int64_t per_unit = 1;
  if (units < threads) {
    const int64_t base = (threads + units - 1) / units;
    per_unit = base;
    while (per_unit < 4 * base && l.cols / (per_unit + base) >= kMinPieceCols) per_unit += base;
  }
  const int64_t width = ((l.cols + per_unit - 1) / per_unit + 15) / 16 * 16;
  per_unit = (l.cols + width - 1) / width;
  // The blocks' partial sums: totals then compensations, (outer, blocks, cols) each.
  at::Tensor partials;
  float *total = nullptr, *comp = nullptr;
  if (blocks > 1) {
    partials = at::empty({2, units, l.cols}, t.options().dtype(at::kFloat));
    total = partials.data_ptr<float>();
    comp = total + units * l.cols;
  }
  auto details = [&] {
    return std::string("rows ") + std::to_string(l.rows) + " x cols " + std::to_string(l.cols) + " in " +
           std::to_string(units * per_unit) + " pieces" +
           (blocks > 1 ? ", " + std::to_string(blocks) + " row blocks" : std::string()) +
           (out_type != t.scalar_type() ? " -> f32" : "");
  };
  run_taken(Op::sum, t, details, [&] {
    const int used = split(units * per_unit, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t u = p / per_unit, o = u / blocks, b = u % blocks;
        const int64_t c0 = p % per_unit * width, c1 = std::min(l.cols, c0 + width);
        if (blocks == 1) {
          ops::column_sums(s, o, c0, c1);
          continue;
        }
        const int64_t r0 = l.rows * b / blocks, r1 = l.rows * (b + 1) / blocks;
        ops::column_partial_sums(s, o, r0, r1, c0, c1, total + u * l.cols, comp + u * l.cols);
      }
    });
    // The blocks combined, a slice's columns at a time: blocks x cols
    // partials (24 KiB for DiT-S/2's proj), read from the caches.
    if (blocks > 1)
      for (int64_t o = 0; o < l.outer; ++o)
        ops::combine_column_sums(s, o, 0, l.cols, total + o * blocks * l.cols, comp + o * blocks * l.cols, blocks);
    return used;
  });
  return out;
}

}  // namespace

void register_reduce(torch::Library &m) {
  if (!group_selected(OpGroup::sum)) return;
  override_kernel(m, "sum.dim_IntList", TORCH_FN(sum));
}

#else

void register_reduce(torch::Library &) {}  // 2.x only

#endif

}  // namespace hcops::torch_ops
