// What the overrides share: the layouts HCOps' kernels cover (each check
// returns nullptr when covered, else the reason PyTorch's kernel runs), the
// split of a call over PyTorch's thread pool, and the reporting around it.
#pragma once

// The tensor and only the operators used here (TORCH_ASSERT_ONLY_METHOD_OPERATORS,
// shim/torch/Makefile.am): ATen/ATen.h's every operator took most of each
// file's compile time.
#include <ATen/core/Tensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <string>
#include <utility>

#include "common/dtype.h"
#include "common/work_share.h"
#include "shim/torch/report.h"
#include "shim/torch/selection.h"

namespace hcops::torch_ops {

// Elements per chunk of the split: a chunk costs well above the start of a
// parallel region (a few microseconds) and stays within the L2 cache.
constexpr int64_t kGrainElements = 32768;

inline const char *dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "f32";
    case at::kBFloat16: return "bf16";
    case at::kDouble: return "f64";
    case at::kHalf: return "f16";
    default: return c10::toString(t);
  }
}

inline std::string shape_name(at::IntArrayRef sizes) {
  if (sizes.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "x" : "") + std::to_string(sizes[i]);
  return s;
}

inline bool fast_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16; }

// The kernels' Dtype of a tensor of a fast dtype.
inline Dtype dtype_of(const at::Tensor &t) { return t.scalar_type() == at::kBFloat16 ? Dtype::bf16 : Dtype::f32; }

// Whether t is dense with its last two dimensions swapped: a transpose(-2,
// -1) of a contiguous tensor (DiT's residual stream under 2.x), read from the
// strides (no view made: binary ops ask on every call). As is_contiguous(),
// it ignores the strides of size-1 dimensions.
inline bool swapped_dense(const at::Tensor &t) {
  const int64_t n = t.dim();
  if (n < 2) return false;
  if (t.numel() == 0) return true;  // as is_contiguous()
  int64_t expected = 1;
  auto dim_ok = [&](int64_t d) {
    if (t.size(d) != 1 && t.stride(d) != expected) return false;
    expected *= t.size(d);
    return true;
  };
  if (!dim_ok(n - 2) || !dim_ok(n - 1)) return false;
  for (int64_t d = n - 3; d >= 0; --d)
    if (!dim_ok(d)) return false;
  return true;
}

// The row kernels of add, mul and sum (binary.cpp, reduce.cpp): below
// kMinRowElements elements PyTorch's own loop is as fast, and the call's
// checks would be most of it; rows of fewer than kMinRowCols elements (an
// (N, 1) column) are PyTorch's, since the kernels' loops are per row.
constexpr int64_t kMinRowElements = 32768;
constexpr int64_t kMinRowCols = 16;

// A tensor the kernels read or write in place: one of their dtypes, dense
// in row-major order, not empty.
inline const char *dense_reason(const at::Tensor &t) {
  if (!fast_dtype(t.scalar_type())) return "dtype";
  if (!t.is_contiguous()) return "non_contiguous";
  if (t.numel() == 0) return "empty";
  return nullptr;
}

// A second operand (the gradient) that pairs element for element with `t`.
inline const char *paired_reason(const at::Tensor &other, const at::Tensor &t) {
  if (other.scalar_type() != t.scalar_type()) return "mixed_dtype";
  if (!other.sizes().equals(t.sizes())) return "broadcast";
  if (!other.is_contiguous()) return "non_contiguous";
  return nullptr;
}

// An out= tensor the kernels can write as it is: PyTorch would neither
// resize it nor cast into it, and it does not overlap the input (or, with
// in_place, is exactly it: the elementwise kernels may write over their
// input, the row kernels read a row more than once).
inline const char *out_reason(const at::Tensor &out, const at::Tensor &in, bool in_place) {
  if (out.scalar_type() != in.scalar_type()) return "out_dtype";
  if (!out.sizes().equals(in.sizes())) return "out_shape";
  if (!out.is_contiguous()) return "out_non_contiguous";
  const at::MemOverlapStatus s = at::get_overlap_status(out, in);
  if (s != at::MemOverlapStatus::No && !(in_place && s == at::MemOverlapStatus::Full)) return "out_overlap";
  return nullptr;
}

// Calls f(begin, end) over [0, n) in chunks of at least `grain`, on
// PyTorch's OpenMP pool (inline inside a parallel region), handed out
// dynamically (common/work_share.h: a thread that loses its core on a
// shared CPU holds up one chunk, not half the call); returns how many
// threads took part.
template <class F>
int split(int64_t n, int64_t grain, const F &f) {
  const int threads = at::in_parallel_region() ? 1 : at::get_num_threads();
  return share_range(n, grain, threads, [&](long b, long e) { f(int64_t(b), int64_t(e)); });
}

// Rows per chunk: about kGrainElements elements.
inline int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(cols, 1)); }

// A call's details for the verbose line: a string, or a callable that
// makes one, called only when the line is printed (add and mul run on
// every residual and modulation of a step: no text for a line not printed).
inline const std::string &details_text(const std::string &d) { return d; }
template <class F, class = decltype(std::declval<const F &>()())>
std::string details_text(const F &make) {
  return make();
}

// Runs `body` (which returns the threads it used) timed and reported as a
// call HCOps took; the shape and details are made into text only when
// HCOPS_VERBOSE prints them.
template <class Body, class Details>
void run_taken(Op op, const at::Tensor &shape_of, const Details &details, const Body &body) {
  const bool timed = timing();
  const double t0 = timed ? now_seconds() : 0;
  int threads = 1;
  try {
    threads = body();
  } catch (const std::bad_alloc &) {
    // A work buffer HCOps could not have: PyTorch's own out-of-memory error
    // (torch.OutOfMemoryError, a RuntimeError), and the process goes on.
    TORCH_CHECK_WITH(OutOfMemoryError, false, "hcops: out of memory in ", op_name(op), " (",
                     dtype_name(shape_of.scalar_type()), " ", shape_name(shape_of.sizes()),
                     "): a work buffer could not be allocated");
  }
  if (!timed) return count_taken(op);
  report_taken(op, dtype_name(shape_of.scalar_type()), shape_name(shape_of.sizes()), threads, now_seconds() - t0,
               details_text(details));
}

inline void fall_back(Op op, const at::Tensor &shape_of, const char *reason) {
  if (!timing()) return count_fallback(op);
  report_fallback(op, dtype_name(shape_of.scalar_type()), shape_name(shape_of.sizes()), reason);
}

// The reason a call cannot take the fast path before its operands are
// looked at: the switch (this thread's override, else the process-wide one).
inline const char *switch_reason() { return switched_on() ? nullptr : "disabled"; }

// f32 data as float, bf16 as hcops::bf16 (layout-compatible with
// c10::BFloat16).
template <class T>
T *data_as(const at::Tensor &t) {
  return reinterpret_cast<T *>(t.data_ptr());
}
static_assert(sizeof(hcops::bf16) == sizeof(c10::BFloat16), "bf16 layouts agree");

// Calls f(T()) with T = float or hcops::bf16 for a fast dtype.
template <class F>
void with_fast_type(at::ScalarType t, const F &f) {
  if (t == at::kFloat) f(float());
  else f(hcops::bf16());
}

}  // namespace hcops::torch_ops
