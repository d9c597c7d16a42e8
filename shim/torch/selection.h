// Which operators this process replaces (HCOPS_OPS, read once at load time)
// and whether replaced operators run HCOps' kernels right now (the
// process-wide switch behind torch.ops.hcops.set_enabled).
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

}  // namespace hcops::torch_ops
