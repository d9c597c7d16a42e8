// Scaled dot-product attention of one (batch, head) slice, forward and
// backward, blocked over the queries so that the scores of a block of query
// rows live in a per-thread buffer in L2 (attention.cpp's query_block) and
// the L x S score matrix never goes to memory. The products run on the GEMM
// engine (serial: the framework layer parallelises over slices, inside its
// own parallel region), the row
// softmax and its backward on the operators' kernels (ops/softmax.h), so
// each kernel family's vector code serves attention too.
//
// Forward: S = scale Q K^T (causal: -Inf above the diagonal, top-left
// aligned, as PyTorch's is_causal), P = softmax(S) per row,
// logsumexp = max + log(sum exp) = s_max - log(p_max), O = P V.
// Backward (from O's gradient dO and P recomputed from the scores and the
// forward's logsumexp in one pass, P = exp(S - logsumexp), as PyTorch's own
// CPU kernel does): dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P))
// (the softmax backward), dQ = scale dS K, dK = scale dS^T Q. For bf16
// slices the softmax and its backward round P and dS to bf16 in their own
// stores, with no pass of their own.
//
// Data is read in place (rows of any stride, unit stride within a row).
// Where the engine's bf16 GEMMs compute on bf16 instructions (the amx
// family, or the avx512_bf16 family where its vdpbf16ps kernels are the
// faster way: kernels/avx512_bf16/dot_rate.h; on AArch64 the sme and
// sve_bf16 families), bf16 slices multiply bf16 operands with f32 sums: the
// scores, their softmax and its backward are f32; P and dS are rounded to
// bf16 before the products that take them (O = P V, dV, dQ, dK), as
// PyTorch's own CPU kernel does, and dK, dV are summed over the query blocks
// in f32 and rounded once. Elsewhere a bf16 slice is widened to f32 once,
// every product and sum is f32 (strict, whatever HCOPS_FP32_MATH allows f32
// work), and the results are rounded once. Either way a
// bf16 result is within a few bf16 ulps of the f32 computation
// (tests/torch2/test_sdpa.py: 2^-6 of the largest value against stock).
// Where the amx family serves the bf16 GEMMs, bf16 slices of S keys, S a
// multiple of 32, run instead fused on the AMX tiles (attention_tiles.h:
// the same math, operands packed once per slice, no GEMM calls).
#pragma once

#include "common/api.h"
#include <cstdint>

#include "common/dtype.h"

HCOPS_API_BEGIN
namespace hcops::ops {

// Keys per slice the blocked kernel takes (longer sequences: the caller's own kernel).
constexpr int64_t kMaxKeys = 8192;

// One slice: L queries, S keys and values, head dimension E (values too).
// Row r of X at x + r * ld_x, its E elements contiguous.
template <typename T>
struct AttentionSlice {
  const T *q, *k, *v;
  int64_t ld_q, ld_k, ld_v;
  T *out;  // L x E, row stride ld_out
  int64_t ld_out;
  float *lse;  // L values, stride ld_lse
  int64_t ld_lse;
};

template <typename T>
struct AttentionGradSlice {
  const T *q, *k, *v, *dout;
  int64_t ld_q, ld_k, ld_v, ld_dout;
  const float *lse;  // the forward's logsumexp of each query row (ours or PyTorch's), stride ld_lse
  int64_t ld_lse;
  T *dq, *dk, *dv;  // L x E, S x E, S x E; row strides below
  int64_t ld_dq, ld_dk, ld_dv;
  // The forward's output (L x E): D = rowsum(dout * out), as PyTorch's
  // kernel computes it, so that a logsumexp which is not the rows' own (a
  // blockwise caller's, with the whole output) means what it means there.
  const T *out = nullptr;
  int64_t ld_out = 0;
};

// Whether bf16 slices run bf16 products (else they are widened to f32):
// decided once, from the kernels that serve the bf16 GEMMs (attention.cpp).
bool attention_bf16_products();
// How bf16 slices of S keys run, for the verbose line: "amx_tiles" (fused on
// the AMX tiles, ops/attention_tiles.h), "bf16" (bf16 products on the
// engine) or "f32" (widened).
const char *attention_bf16_route(int64_t S);

void attention_forward(const AttentionSlice<float> &s, int64_t L, int64_t S, int64_t E, float scale, bool causal);
void attention_forward(const AttentionSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale, bool causal);
void attention_backward(const AttentionGradSlice<float> &s, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal);
void attention_backward(const AttentionGradSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal);

}  // namespace hcops::ops
HCOPS_API_END
