// The registration of each operator group's overrides, called once at
// load time by register.cpp with the aten CPU library being built.
#pragma once

#include <torch/library.h>

#include <string>
#include <utility>
#include <vector>

namespace hcops::torch_ops {

// The aten overloads registered so far ("gelu", "gelu.out", ...), for
// torch.ops.hcops.loaded_ops.
std::vector<std::string> &registered_names();

// m.impl, remembered in registered_names().
template <class Fn>
void override_kernel(torch::Library &m, const char *name, Fn &&fn) {
  m.impl(name, std::forward<Fn>(fn));
  registered_names().emplace_back(name);
}

// Each registers the overrides of the groups HCOPS_OPS selects.
void register_eltwise(torch::Library &m);     // gelu, silu
void register_softmax(torch::Library &m);     // softmax, log_softmax
void register_layer_norm(torch::Library &m);  // layer_norm
void register_gemm(torch::Library &m);        // mm, addmm, bmm, baddbmm
void register_attention(torch::Library &m);   // the SDPA flash attention of 2.x (none in 1.13)
void register_binary(torch::Library &m);      // add, mul of f32 / bf16, mixed (2.x; none in 1.13)
void register_reduce(torch::Library &m);      // sum over leading dimensions, f32 / bf16 (2.x; none in 1.13)
void register_adam(torch::Library &m);        // hcops::adam_step_, hcops::adam_selected (a FRAGMENT of hcops::)

}  // namespace hcops::torch_ops
