// What the replaced operators did: counters (always kept, for
// torch.ops.hcops.call_counts), and under HCOPS_VERBOSE the lines of
// shim/common/verbose.h's format. Level 1: a legend once, then a line per
// call HCOps computed and one per call it left to PyTorch,
//   hcops_verbose,exec,<op>,<dtype>,<shape>,<threads>,<ms>,hcops:<family>,<details>
//   hcops_verbose,fallback,<op>,<dtype>,<shape>,<reason>
// Level 2 adds a summary per operator at exit: calls, total time, and how
// many calls fell back to PyTorch, by reason.
#pragma once

#include <cstdint>
#include <string>

namespace hcops::torch_ops {

// The ATen operators replaced, as X(enumerator, ATen name); out= and in-place
// overloads count as their functional operator. The one list of them: the
// enum below and report.cpp's names expand it.
#define HCOPS_TORCH_OPS(X)                                                    \
  X(gelu, "gelu")                                                             \
  X(gelu_backward, "gelu_backward")                                           \
  X(silu, "silu")                                                             \
  X(silu_backward, "silu_backward")                                           \
  X(softmax, "_softmax")                                                      \
  X(softmax_backward, "_softmax_backward_data")                               \
  X(log_softmax, "_log_softmax")                                              \
  X(log_softmax_backward, "_log_softmax_backward_data")                       \
  X(layer_norm, "native_layer_norm")                                          \
  X(layer_norm_backward, "native_layer_norm_backward")                        \
  X(adam_step, "adam_step_") /* hcops::adam_step_, the fused optimizer step */ \
  X(mm, "mm")                                                                 \
  X(addmm, "addmm")                                                           \
  X(bmm, "bmm")                                                               \
  X(baddbmm, "baddbmm")                                                       \
  X(sdpa, "_scaled_dot_product_flash_attention_for_cpu")                      \
  X(sdpa_backward, "_scaled_dot_product_flash_attention_for_cpu_backward") \
  X(add, "add")                                                               \
  X(mul, "mul")                                                               \
  X(sum, "sum")

enum class Op : uint8_t {
#define HCOPS_TORCH_OP_ENUM(e, name) e,
  HCOPS_TORCH_OPS(HCOPS_TORCH_OP_ENUM)
#undef HCOPS_TORCH_OP_ENUM
  count
};

const char *op_name(Op op);  // the ATen name: "_softmax_backward_data"
// The op whose ATen name is `name`, or Op::count.
Op op_named(const std::string &name);

// A call HCOps computed, `threads` of PyTorch's pool taking part, and one
// PyTorch's kernel ran because of `reason` (a short literal: "dtype",
// "non_contiguous", "disabled", ...).
void report_taken(Op op, const char *dtype, const std::string &shape, int threads, double seconds,
                  const std::string &details);
void report_fallback(Op op, const char *dtype, const std::string &shape, const char *reason);
// A call HCOps computed that prints its own line (the GEMMs: the BLAS
// lines' format, shim/common/gemm_call.h): the counter only.
void count_taken(Op op);
// A call PyTorch's kernel ran, when nothing is printed: the counter only.
void count_fallback(Op op);

// A line of what HCOps decided outside a call, under HCOPS_VERBOSE >= 1:
//   hcops_verbose,info,<what>
void report_info(const std::string &what);

// Calls taken and fallen back so far in this process.
int64_t taken_calls(Op op);
int64_t fallback_calls(Op op);

// Whether a call should be timed (HCOPS_VERBOSE >= 1), and the clock.
bool timing();
double now_seconds();

}  // namespace hcops::torch_ops
