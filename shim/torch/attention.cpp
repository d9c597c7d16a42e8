// aten::_scaled_dot_product_flash_attention_for_cpu and its backward: what
// F.scaled_dot_product_attention runs on the CPU in PyTorch 2.x (timm's
// Attention, hence DiT), on HCOps' blocked attention (ops/attention.h):
// f32 and bf16 query, key and value of shape (B, H, L|S, E), rows of any
// stride with E contiguous (timm's q, k, v are views into one qkv tensor),
// one slice per (batch, head) on PyTorch's thread pool. The output, the
// logsumexp (B, H, L, f32) and the gradients have the strides PyTorch's
// kernel gives them. Deliberately not PyTorch 2.15's: query, key and value
// whose last dimension is strided are read as they are (PyTorch's kernel
// computes a wrong result from them: 1.4 off for unit inputs, where it
// is right on contiguous copies); a NaN in a query makes its row NaN, as the
// math of attention (and F.scaled_dot_product_attention's math path), where
// PyTorch's flash kernel gives 0.
//
// PyTorch's kernel runs, with the reason under HCOPS_VERBOSE, for: dropout,
// an attention mask, is_causal with L != S (alignment), other dtypes, mixed
// dtypes, value heads of another size, empty tensors, sequences longer than
// ops::kMaxKeys, and a backward whose gradient or saved tensors do not match.
// The operators exist from PyTorch 2.x on (the 1.13 build registers none).
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#if HCOPS_TORCH_MAJOR >= 2  // the operators of 2.x
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_cpu_dispatch.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward_cpu_dispatch.h>
#endif
#include <torch/library.h>

#include <cmath>

#include "ops/attention.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

#if HCOPS_TORCH_MAJOR >= 2

namespace {

using Pair = std::tuple<at::Tensor, at::Tensor>;
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// A (B, H, rows, E) operand the slices read in place: E contiguous.
at::Tensor rows_dense(const at::Tensor &t) { return t.stride(3) == 1 ? t : t.contiguous(); }

const char *shape_reason(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "rank";
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != q.size(1) || v.size(1) != q.size(1))
    return "batch_heads";
  if (k.size(3) != q.size(3) || v.size(3) != q.size(3) || v.size(2) != k.size(2)) return "head_size";
  if (q.numel() == 0 || k.numel() == 0) return "empty";
  if (k.size(2) > ops::kMaxKeys) return "long_sequence";
  return nullptr;
}

const char *common_reason(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, double dropout_p,
                          bool is_causal, const std::optional<at::Tensor> &attn_mask) {
  if (const char *r = switch_reason()) return r;
  if (!fast_dtype(q.scalar_type())) return "dtype";
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type()) return "mixed_dtype";
  if (q.layout() != at::kStrided || k.layout() != at::kStrided || v.layout() != at::kStrided) return "layout";
  if (dropout_p > 0) return "dropout";
  if (attn_mask.has_value() && attn_mask->defined()) return "mask";
  if (const char *r = shape_reason(q, k, v)) return r;
  if (is_causal && q.size(2) != k.size(2)) return "causal_rectangular";
  return nullptr;
}

// Runs body(tag, b, h) for every (batch, head) slice on PyTorch's pool (T
// = decltype(tag): float or bf16), timed and reported as a call of `op`.
template <class Body>
void for_each_slice(Op op, const at::Tensor &q, int64_t S, bool causal, const Body &body) {
  const int64_t B = q.size(0), H = q.size(1);
  // bf16: how its products run (ops::attention_bf16_route: fused on the AMX
  // tiles, bf16 GEMMs, or widened to f32).
  std::string details = "S=" + std::to_string(S) + (causal ? " causal" : "");
  if (q.scalar_type() == at::kBFloat16) details += std::string(" products=") + ops::attention_bf16_route(S);
  run_taken(op, q, details, [&] {
    int threads = 1;
    with_fast_type(q.scalar_type(), [&](auto tag) {
      threads = split(B * H, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t bh = b0; bh < b1; ++bh) body(tag, bh / H, bh % H);
      });
    });
    return threads;
  });
}

float scale_of(const at::Tensor &q, std::optional<double> scale) {
  return scale.has_value() ? float(*scale) : float(1.0 / std::sqrt(double(q.size(3))));
}

Pair forward(const at::Tensor &query, const at::Tensor &key, const at::Tensor &value, double dropout_p,
             bool is_causal, const std::optional<at::Tensor> &attn_mask, std::optional<double> scale) {
  if (const char *why = common_reason(query, key, value, dropout_p, is_causal, attn_mask)) {
    fall_back(Op::sdpa, query, why);
    return at::cpu::_scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, attn_mask,
                                                                scale);
  }
  const at::Tensor q = rows_dense(query), k = rows_dense(key), v = rows_dense(value);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2), E = q.size(3);
  // As PyTorch's kernel: the output laid out like the query (timm's q, a
  // view of qkv, gives (B, L, H, E) memory, which the following
  // transpose(1, 2).reshape makes a view of), the logsumexp (B, L, H).
  at::Tensor result = at::empty_like(query);
  at::Tensor out = result.stride(3) == 1 ? result : at::empty({B, H, L, E}, q.options());
  at::Tensor lse = at::empty({B, L, H}, q.options().dtype(at::kFloat)).permute({0, 2, 1});
  const float sc = scale_of(q, scale);
  for_each_slice(Op::sdpa, q, S, is_causal, [&](auto tag, int64_t b, int64_t h) {
    using T = decltype(tag);
    auto at_bh = [&](const at::Tensor &t) { return b * t.stride(0) + h * t.stride(1); };
    ops::AttentionSlice<T> s{data_as<T>(q) + at_bh(q),
                             data_as<T>(k) + at_bh(k),
                             data_as<T>(v) + at_bh(v),
                             q.stride(2),
                             k.stride(2),
                             v.stride(2),
                             data_as<T>(out) + at_bh(out),
                             out.stride(2),
                             lse.data_ptr<float>() + at_bh(lse),
                             lse.stride(2)};
    ops::attention_forward(s, L, S, E, sc, is_causal);
  });
  if (!out.is_same(result)) result.copy_(out);
  return {result, lse};
}

Triple backward(const at::Tensor &grad_out, const at::Tensor &query, const at::Tensor &key, const at::Tensor &value,
                const at::Tensor &out, const at::Tensor &logsumexp, double dropout_p, bool is_causal,
                const std::optional<at::Tensor> &attn_mask, std::optional<double> scale) {
  const char *why = common_reason(query, key, value, dropout_p, is_causal, attn_mask);
  if (!why && (grad_out.scalar_type() != query.scalar_type() || !grad_out.sizes().equals(query.sizes()) ||
               grad_out.layout() != at::kStrided))
    why = "grad_out";
  // The backward reads each query row's logsumexp (P = exp(S - logsumexp)):
  // (B, H, L) f32, as the forward returns it, or PyTorch's kernel decides.
  if (!why && (logsumexp.scalar_type() != at::kFloat || logsumexp.dim() != 3 || logsumexp.size(0) != query.size(0) ||
               logsumexp.size(1) != query.size(1) || logsumexp.size(2) != query.size(2)))
    why = "logsumexp";
  // And the forward's output, for D = rowsum(dO O): the query's type and shape.
  if (!why && (out.scalar_type() != query.scalar_type() || !out.sizes().equals(query.sizes()) ||
               out.layout() != at::kStrided))
    why = "out";
  if (why) {
    fall_back(Op::sdpa_backward, query, why);
    return at::cpu::_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out, logsumexp,
                                                                         dropout_p, is_causal, attn_mask, scale);
  }
  const at::Tensor q = rows_dense(query), k = rows_dense(key), v = rows_dense(value), dout = rows_dense(grad_out),
                   o = rows_dense(out);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2), E = q.size(3);
  // (B, L|S, H, E) memory, as PyTorch's kernel returns the gradients.
  auto grad = [&](int64_t rows) { return at::empty({B, rows, H, E}, q.options()).transpose(1, 2); };
  at::Tensor dq = grad(L), dk = grad(S), dv = grad(S);
  const float sc = scale_of(q, scale);
  for_each_slice(Op::sdpa_backward, q, S, is_causal, [&](auto tag, int64_t b, int64_t h) {
    using T = decltype(tag);
    auto at_bh = [&](const at::Tensor &t) { return b * t.stride(0) + h * t.stride(1); };
    ops::AttentionGradSlice<T> s{data_as<T>(q) + at_bh(q),
                                 data_as<T>(k) + at_bh(k),
                                 data_as<T>(v) + at_bh(v),
                                 data_as<T>(dout) + at_bh(dout),
                                 q.stride(2),
                                 k.stride(2),
                                 v.stride(2),
                                 dout.stride(2),
                                 logsumexp.data_ptr<float>() + at_bh(logsumexp),
                                 logsumexp.stride(2),
                                 data_as<T>(dq) + at_bh(dq),
                                 data_as<T>(dk) + at_bh(dk),
                                 data_as<T>(dv) + at_bh(dv),
                                 dq.stride(2),
                                 dk.stride(2),
                                 dv.stride(2),
                                 data_as<T>(o) + at_bh(o),
                                 o.stride(2)};
    ops::attention_backward(s, L, S, E, sc, is_causal);
  });
  return {dq, dk, dv};
}

}  // namespace

void register_attention(torch::Library &m) {
  if (!group_selected(OpGroup::attention)) return;
  override_kernel(m, "_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(forward));
  override_kernel(m, "_scaled_dot_product_flash_attention_for_cpu_backward", TORCH_FN(backward));
}

#else

void register_attention(torch::Library &) {}  // PyTorch 1.13 has no such operators

#endif

}  // namespace hcops::torch_ops
