// Which operators this process replaces (HCOPS_OPS, read once at load time)
// and whether replaced operators run HCOps' kernels right now (the
// process-wide switch behind torch.ops.hcops.set_enabled, and a thread's
// own override of it behind hcops.torch.enabled(on) blocks).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace hcops::torch_ops {

// Operator groups as HCOPS_OPS names them. Each aten override belongs to
// one: gelu covers gelu, gelu_, gelu.out, gelu_backward(.grad_input).
// gemm covers mm, addmm, bmm and baddbmm (functional, out= and in-place);
// attention PyTorch 2.x's _scaled_dot_product_flash_attention_for_cpu(_backward);
// binary 2.x's add.Tensor and mul.Tensor of f32 / bf16 operands (shim/torch/binary.cpp);
// sum 2.x's sum.dim_IntList over leading dimensions (shim/torch/reduce.cpp).
// The one list of them, X(group): the enum and selection.cpp's names (and
// HCOPS_OPS's error message) expand it.
#define HCOPS_TORCH_OP_GROUPS(X) X(gelu) X(silu) X(softmax) X(log_softmax) X(layer_norm) X(adam) X(adamw) X(gemm) X(attention) X(binary) X(sum)
enum class OpGroup : uint8_t {
#define HCOPS_TORCH_GROUP_ENUM(g) g,
  HCOPS_TORCH_OP_GROUPS(HCOPS_TORCH_GROUP_ENUM)
#undef HCOPS_TORCH_GROUP_ENUM
  count
};

const char *group_name(OpGroup g);

// HCOPS_OPS=all|none|<comma list of group names>, case-insensitive, blanks
// around names ignored. Unset or empty means all; a bad value (an unknown
// name, or none inside a list) warns once and means all.
bool group_selected(OpGroup g);
// The selection of `value` (nullptr = unset), for the parser's own tests;
// bit i is OpGroup i. `error` receives the warning text, empty when valid.
uint32_t parse_selection(const char *value, std::string *error);

// False while torch.ops.hcops.set_enabled(False) is in force: every
// replaced operator then runs PyTorch's own kernel.
extern std::atomic<bool> enabled;

// The calling thread's override of that switch (torch.ops.hcops.
// set_thread_enabled): kNoOverride, or 0 / 1. hcops.torch.enabled(on) sets
// it for its block and puts the previous value back after, so blocks in two
// threads that overlap in time leave each other's state alone (with the
// process-wide switch saved and restored, the block that ended last put back
// the other's state: HCOps could be left off for every thread). A dispatcher
// call is decided on the thread that makes it, and PyTorch runs a CPU
// backward on the thread that called backward().
constexpr int8_t kNoOverride = -1;
extern thread_local int8_t thread_enabled;

// Whether replaced operators run HCOps' kernels on this thread now.
inline bool switched_on() {
  const int8_t own = thread_enabled;
  return own == kNoOverride ? enabled.load(std::memory_order_relaxed) : own != 0;
}

}  // namespace hcops::torch_ops
