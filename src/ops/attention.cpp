// Attention of one slice (ops/attention.h): query blocks against all keys,
// the products on the GEMM engine (bf16 slices on its bf16 kernels where
// those compute on AMX or AVX512_BF16 instructions, else widened to f32
// once), the softmax on the operators' kernels.
#include "ops/attention.h"

#include "config.h"  // HCOPS_HAVE_AMX

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "common/cpu_features.h"
#include "common/fault.h"
#include "common/topology.h"
#include "gemm/gemm.h"
#include "gemm/held_a.h"
#include "kernels/registry.h"
#if HCOPS_HAVE_AMX
#include "ops/attention_amx.h"
#endif
#include "ops/eltwise.h"
#include "ops/softmax.h"

namespace hcops::ops {

namespace {

// The engine's datatypes for a slice of T: `In` multiplies two T operands
// into an f32 C (scores, their gradients, the dK / dV sums), `Out` into a C
// of T (the output and dQ, written once per query block).
template <typename T>
struct SliceTypes;
template <>
struct SliceTypes<float> {
  using In = Sgemm;
  using Out = Sgemm;
};
template <>
struct SliceTypes<bf16> {
  using In = Bf16Gemm;
  using Out = Bf16Bf16Gemm;
};

// The right operand of a slice's row-major products with K or V (the
// engine's op(A)), the same for each of its query blocks: packed once, at
// the first block, where the slice has several (gemm/held_a.h), and read
// from there by the others. One per product and slice call: a slice never
// reads what was packed for another.
struct SharedOperand {
  HeldPackedA &held;
  bool several_blocks;
  bool tried = false, ok = false;
  template <typename Ty>
  const HeldPackedA *for_product(const GemmArgs<Ty> &g) {
    if (!several_blocks) return nullptr;
    if (!tried) ok = hold_packed_a(g, held);
    tried = true;
    return ok ? &held : nullptr;
  }
};

// Row-major C (m x n, ldc) = alpha op(A) op(B) + beta C, on the column-major
// engine as C^T = op(B)^T op(A)^T; op(X) = X^T where tx. f32 in the
// HCOPS_FP32_MATH mode in effect (mode engine), as every f32 GEMM of HCOps,
// but for a bf16 slice widened to f32 (mode strict): the mode is asked for
// f32 work, and a bf16 slice is widened because bf16 instructions are not
// the faster way here (environment.md: not the bf16 routines). With
// `shared`, B is a slice's K or V, packed once for its query blocks.
template <typename Ty>
void rm_gemm(F32Mode mode, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const typename Ty::a_type *a,
             int64_t lda, const typename Ty::b_type *b, int64_t ldb, float beta, typename Ty::c_type *c, int64_t ldc,
             SharedOperand *shared = nullptr) {
  GemmArgs<Ty> g{tb ? Trans::T : Trans::N, ta ? Trans::T : Trans::N, n, m, k, alpha, b, ldb, a, lda, beta, c,
                 ldc};
  g.f32_mode = mode;
  if (shared) g.a_held = shared->for_product(g);
  gemm(g);
}

// Whether bf16 slices multiply bf16 operands: where the kernels that serve
// the bf16 GEMMs compute on bf16 instructions (GemmKernel::bf16_instructions:
// AMX, AVX512_BF16; on AArch64 SVE's BFDOT, the sve_bf16 family, and SME's
// BFMOPA, each twice the multiply-adds of its f32 instruction:
// doc/aarch64.md's loop rates, 64 against 32 flops a cycle on Neoverse V1
// and V2). Elsewhere
// the slice is widened to f32 once and runs on the f32 kernels: on AVX2 and
// AVX-512 without BF16, and where the avx512_bf16 family passes over
// vdpbf16ps for its tile widened onto the FMAs (kernels/avx512_bf16/
// dot_rate.h), which
// would widen every product's operands again, P and dS included. On the
// Intel Xeon guest without AMX (vdpbf16ps at half the FMAs' rate), DiT-S/2's
// slices (8x6x256x64, 2 threads, perf/torch2_attention.py) took 5.0-5.1 ms
// forward and 11.0-11.1 backward through the widened GEMMs, 4.5 and 9.5
// widened once. On AVX2 the avx2 family's bf16 kernels (FMA on widened
// pairs) are no faster than widening once: DiT-S/2's slices through them,
// P and dS rounded, took the same time within the guest's noise on Zen 3
// (forward 7.5-10.9 ms against 7.5-12.9, backward 16.8-28.6 against
// 15.9-16.9), and widening keeps every product in f32. HCOPS_ISA chooses
// as for every GEMM (avx512_bf16 keeps vdpbf16ps whatever its rate).
bool native_bf16_products() {
  static const bool native = [] {
    const ChosenKernel<Bf16Gemm> &in = chosen_kernel<Bf16Gemm>();
    const ChosenKernel<Bf16Bf16Gemm> &out = chosen_kernel<Bf16Bf16Gemm>();
    const auto bf16_instructions = [](const auto &c) { return c.kernel && c.kernel->bf16_instructions; };
    return bf16_instructions(in) && bf16_instructions(out);
  }();
  return native;
}

// Whether bf16 slices of S keys run fused on the AMX tiles
// (attention_amx.h): where the amx family serves the bf16 GEMMs (so its
// features, the tile state's permission and HCOPS_ISA all allow it) and
// the kernel takes S (whole tiles of keys). Elsewhere the GEMMs below.
bool fused_on_tiles(int64_t S) {
#if HCOPS_HAVE_AMX
  static const bool amx = [] {
    const ChosenKernel<Bf16Gemm> &in = chosen_kernel<Bf16Gemm>();
    return in.kernel && (in.family->needs & kAmxTile) && native_bf16_products();
  }();
  return amx && amx_attention_takes(S);
#else
  (void)S;
  return false;
#endif
}

// Query rows per block of L queries against S keys, the block's own buffers
// taking bytes_per_key per row and key: as many rows as keep those buffers
// in half of this CPU's L2 (the other half holds the parts of K, V and the
// GEMMs' packed panels being worked on), a multiple of 16, at least 16, and
// the blocks of a slice as even as that allows. On a 1 MiB L2 at 1024 keys:
// f32 blocks of 128 rows forward, 64 backward. (A fixed 512 KiB of scores,
// with P and dP beside them in as much again each, spilt the backward's
// block to L3 there.)
int64_t query_block(int64_t L, int64_t S, int64_t bytes_per_key) {
  const int64_t budget = int64_t(topology().l2 / 2);
  const int64_t most = std::max<int64_t>(budget / (std::max<int64_t>(S, 1) * bytes_per_key) / 16 * 16, 16);
  const int64_t blocks = std::max<int64_t>((L + most - 1) / most, 1);
  return std::max<int64_t>(((L + blocks - 1) / blocks + 15) / 16 * 16, 16);
}

// Per-thread buffers, grown as needed and kept: a slice's call allocates
// nothing after the first. f32 blocks are worked in place: P over the
// scores, dS over dP (the softmax and its backward are elementwise along
// each row).
struct Buffers {
  std::vector<float> s, dp;     // query_block x S: scores then P; dP then (f32 slices) dS
  std::vector<bf16> p16, ds16;  // P and dS rounded, for bf16 slices
  std::vector<float> dk, dv;    // S x E accumulators
  std::vector<float> d, sums;   // D and the rows' sums of P, of a query block
  HeldPackedA k_scores, v_held, k_dq;  // K and V packed for a slice's query blocks
  // A bf16 slice widened to f32 (without native bf16 products): q, k, v,
  // dO, the forward's output and the results, (L or S) x E each.
  std::vector<float> wq, wk, wv, wdo, wout, wo, wdq, wdk, wdv;
};
Buffers &buffers() {
  thread_local Buffers b;
  return b;
}

// A thread's buffer, grown to n elements; std::bad_alloc when it cannot be
// (the shim turns that into PyTorch's out-of-memory error).
template <typename T>
T *sized(std::vector<T> &v, int64_t n) {
  if (v.size() < size_t(n)) {
    if (fault::allocation_fails()) throw std::bad_alloc();
    v.resize(size_t(n));
  }
  return v.data();
}

// How a slice's scores get their scale: by the softmax as it reads them
// (ops/softmax.h: the same values as scaling the product's output, which
// then needs no pass of its own), which takes a positive finite scale; any
// other by the product (tests/torch2/test_sdpa.py has a negative one).
struct ScoreScale {
  float product, softmax;
  explicit ScoreScale(float scale) {
    const bool fold = scale > 0 && std::isfinite(scale);
    product = fold ? 1.0f : scale;
    softmax = fold ? scale : 1.0f;
  }
};

// The row stride, in elements, of a query block's buffers (f32 and bf16)
// for S keys: S rounded up to 32, and 32 more, so that rows start on a line
// in either type and are not a multiple of 4 KiB apart. The GEMMs read a
// block's rows as their op(B) in place, a row per column of the tile (or
// per step of k); rows 4 KiB apart (1024 f32 keys) all fall in one set of
// L1. XL/2's f32 attention at 1024 tokens, 2 threads, Zen 5: forward
// 36-40 -> 33-36 ms.
inline int64_t block_ld(int64_t S) { return (S + 31) / 32 * 32 + 32; }

// Scores of query rows [i0, i0 + qb) into s (qb x S, rows ld apart), times
// sc.product, with the causal mask applied.
template <typename T>
void scores(F32Mode mode, const T *q, int64_t ldq, const T *k, int64_t ldk, int64_t i0, int64_t qb, int64_t S,
            int64_t E, ScoreScale sc, bool causal, float *s, int64_t ld, SharedOperand &k_shared) {
  rm_gemm<typename SliceTypes<T>::In>(mode, false, true, qb, S, E, sc.product, q + i0 * ldq, ldq, k, ldk, 0.0f, s, ld,
                                      &k_shared);
  if (causal)
    for (int64_t r = 0; r < qb; ++r)
      std::fill(s + r * ld + std::min(S, i0 + r + 1), s + r * ld + S, -std::numeric_limits<float>::infinity());
}

// The probabilities of a query block as the operand of O = P V: f32 for f32
// slices, over the scores; for bf16 slices rounded to bf16 by the softmax's
// own store (one pass over the block fewer than rounding an f32 P).
float *probabilities(Buffers &, float *s, int64_t qb, int64_t S, int64_t ld, ScoreScale sc, float *lse,
                     int64_t ld_lse, float) {
  softmax_forward(s, s, qb, S, ld, lse, ld_lse, sc.softmax);
  return s;
}
bf16 *probabilities(Buffers &buf, float *s, int64_t qb, int64_t S, int64_t ld, ScoreScale sc, float *lse,
                    int64_t ld_lse, bf16) {
  bf16 *p = sized(buf.p16, qb * ld);
  softmax_forward(s, p, qb, S, ld, lse, ld_lse, sc.softmax);
  return p;
}

template <typename T>
void forward(const AttentionSlice<T> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal,
             F32Mode mode = F32Mode::engine) {
  using Out = typename SliceTypes<T>::Out;
  Buffers &buf = buffers();
  const int64_t qb_max = query_block(L, S, sizeof(float) + (std::is_same_v<T, bf16> ? sizeof(bf16) : 0));
  const int64_t ld = block_ld(S);
  float *s = sized(buf.s, qb_max * ld);
  const ScoreScale sc(scale);
  SharedOperand k_shared{buf.k_scores, L > qb_max}, v_shared{buf.v_held, L > qb_max};
  for (int64_t i0 = 0; i0 < L; i0 += qb_max) {
    const int64_t qb = std::min(qb_max, L - i0);
    scores(mode, a.q, a.ld_q, a.k, a.ld_k, i0, qb, S, E, sc, causal, s, ld, k_shared);
    const T *pt = probabilities(buf, s, qb, S, ld, sc, a.lse + i0 * a.ld_lse, a.ld_lse, T());
    rm_gemm<Out>(mode, false, false, qb, E, S, 1.0f, pt, ld, a.v, a.ld_v, 0.0f, a.out + i0 * a.ld_out, a.ld_out,
                 &v_shared);  // O = P V
  }
}

// dS = P (dP - D), D given per row (row_sums_of_dp_p), as the operand of
// dQ and dK: f32 over dP, or rounded to bf16 by the softmax backward's store.
const float *score_grads(Buffers &, float *dp, const float *p, const float *d, int64_t qb, int64_t S, int64_t ld,
                         float) {
  softmax_backward(dp, p, d, dp, qb, S, ld);
  return dp;
}
const bf16 *score_grads(Buffers &buf, float *dp, const float *p, const float *d, int64_t qb, int64_t S, int64_t ld,
                        bf16) {
  bf16 *ds = sized(buf.ds16, qb * ld);
  softmax_backward(dp, p, d, ds, qb, S, ld);
  return ds;
}

// D = rowsum(dP P) of rows [i0, i0 + qb), which is rowsum(dO O): from P
// and dP in f32 where the logsumexp was the row's own (P renormalised: the
// accurate one; a bf16 O is rounded, and dP - D cancels), from dO and the
// forward's output where it was not (PyTorch's kernel takes D from O, and a
// blockwise caller's logsumexp with the whole output means that).
template <typename T>
void row_sums_of_dp_p(const AttentionGradSlice<T> &a, int64_t i0, int64_t qb, int64_t S, int64_t ld, int64_t E,
                      const float *dp, const float *p, const float *sums, float *d) {
  row_dots(dp, p, d, qb, S, ld);
  for (int64_t r = 0; r < qb; ++r) {
    if (lse_is_rows(sums[r])) continue;
    const T *g = a.dout + (i0 + r) * a.ld_dout, *o = a.out + (i0 + r) * a.ld_out;
    float sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += float(g[e]) * float(o[e]);
    d[r] = sum;
  }
}

// The S x E f32 sums into the slice's rows of T.
void store_rows(const float *x, int64_t rows, int64_t E, float *y, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::copy(x + r * E, x + (r + 1) * E, y + r * ld);
}
void store_rows(const float *x, int64_t rows, int64_t E, bf16 *y, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) to_bf16(x + r * E, y + r * ld, E);
}

template <typename T>
void backward(const AttentionGradSlice<T> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal,
              F32Mode mode = F32Mode::engine) {
  using In = typename SliceTypes<T>::In;
  using Out = typename SliceTypes<T>::Out;
  constexpr bool kBf16 = std::is_same_v<T, bf16>;
  Buffers &buf = buffers();
  const int64_t qb_max = query_block(L, S, 2 * sizeof(float) + (kBf16 ? 2 * sizeof(bf16) : 0));
  const int64_t ld = block_ld(S);
  float *p = sized(buf.s, qb_max * ld), *dp = sized(buf.dp, qb_max * ld);  // p over the scores, dS (f32) over dP
  bf16 *p16 = kBf16 ? sized(buf.p16, qb_max * ld) : nullptr;
  float *dk = sized(buf.dk, S * E), *dv = sized(buf.dv, S * E);  // accumulated over the query blocks
  float *d = sized(buf.d, qb_max), *sums = sized(buf.sums, qb_max);
  const ScoreScale sc(scale);
  SharedOperand k_shared{buf.k_scores, L > qb_max}, v_shared{buf.v_held, L > qb_max}, k_dq{buf.k_dq, L > qb_max};
  for (int64_t i0 = 0; i0 < L; i0 += qb_max) {
    const int64_t qb = std::min(qb_max, L - i0);
    const float beta = i0 == 0 ? 0.0f : 1.0f;
    const T *dout = a.dout + i0 * a.ld_dout, *q = a.q + i0 * a.ld_q;
    scores(mode, a.q, a.ld_q, a.k, a.ld_k, i0, qb, S, E, sc, causal, p, ld, k_shared);
    softmax_from_lse(p, sc.softmax, a.lse + i0 * a.ld_lse, a.ld_lse, p, p16, sums, qb, S, ld);  // P, from the logsumexp
    const T *pt = nullptr;
    if constexpr (kBf16) pt = p16;
    else pt = p;
    rm_gemm<In>(mode, true, false, S, E, qb, 1.0f, pt, ld, dout, a.ld_dout, beta, dv, E);  // dV += P^T dO
    rm_gemm<In>(mode, false, true, qb, S, E, 1.0f, dout, a.ld_dout, a.v, a.ld_v, 0.0f, dp, ld,
                &v_shared);  // dP = dO V^T
    row_sums_of_dp_p(a, i0, qb, S, ld, E, dp, p, sums, d);
    const T *dst = score_grads(buf, dp, p, d, qb, S, ld, T());                              // dS
    rm_gemm<Out>(mode, false, false, qb, E, S, scale, dst, ld, a.k, a.ld_k, 0.0f, a.dq + i0 * a.ld_dq, a.ld_dq,
                 &k_dq);                                                               // dQ = scale dS K
    rm_gemm<In>(mode, true, false, S, E, qb, scale, dst, ld, q, a.ld_q, beta, dk, E);  // dK += scale dS^T Q
  }
  if (L == 0) {  // no queries: the loop wrote no block, and the gradients are zero
    std::fill(dk, dk + S * E, 0.0f);
    std::fill(dv, dv + S * E, 0.0f);
  }
  store_rows(dk, S, E, a.dk, a.ld_dk);
  store_rows(dv, S, E, a.dv, a.ld_dv);
}

// Rows of a bf16 slice as f32 (E contiguous), and back, rounded once.
float *widened(const bf16 *x, int64_t ld, int64_t rows, int64_t E, std::vector<float> &buf) {
  float *y = sized(buf, rows * E);
  for (int64_t r = 0; r < rows; ++r) from_bf16(x + r * ld, y + r * E, E);
  return y;
}

void forward_widened(const AttentionSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  Buffers &buf = buffers();
  float *out = sized(buf.wo, L * E);
  const AttentionSlice<float> w{widened(a.q, a.ld_q, L, E, buf.wq), widened(a.k, a.ld_k, S, E, buf.wk),
                                widened(a.v, a.ld_v, S, E, buf.wv), E, E, E, out, E, a.lse, a.ld_lse};
  forward(w, L, S, E, scale, causal, F32Mode::strict);
  store_rows(out, L, E, a.out, a.ld_out);
}

void backward_widened(const AttentionGradSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
                      bool causal) {
  Buffers &buf = buffers();
  float *dq = sized(buf.wdq, L * E), *dk = sized(buf.wdk, S * E), *dv = sized(buf.wdv, S * E);
  const AttentionGradSlice<float> w{widened(a.q, a.ld_q, L, E, buf.wq),
                                    widened(a.k, a.ld_k, S, E, buf.wk),
                                    widened(a.v, a.ld_v, S, E, buf.wv),
                                    widened(a.dout, a.ld_dout, L, E, buf.wdo),
                                    E, E, E, E, a.lse, a.ld_lse, dq, dk, dv, E, E, E,
                                    widened(a.out, a.ld_out, L, E, buf.wout), E};
  backward(w, L, S, E, scale, causal, F32Mode::strict);
  store_rows(dq, L, E, a.dq, a.ld_dq);
  store_rows(dk, S, E, a.dk, a.ld_dk);
  store_rows(dv, S, E, a.dv, a.ld_dv);
}

}  // namespace

bool attention_bf16_products() { return native_bf16_products(); }

const char *attention_bf16_route(int64_t S) {
  if (fused_on_tiles(S)) return "amx_tiles";
  return native_bf16_products() ? "bf16" : "f32";
}

void attention_forward(const AttentionSlice<float> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  forward(a, L, S, E, scale, causal);
}
void attention_forward(const AttentionSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
#if HCOPS_HAVE_AMX
  if (fused_on_tiles(S)) return amx_attention_forward(a, L, S, E, scale, causal);
#endif
  if (native_bf16_products()) forward(a, L, S, E, scale, causal);
  else forward_widened(a, L, S, E, scale, causal);
}
void attention_backward(const AttentionGradSlice<float> &a, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal) {
  backward(a, L, S, E, scale, causal);
}
void attention_backward(const AttentionGradSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal) {
#if HCOPS_HAVE_AMX
  if (fused_on_tiles(S)) return amx_attention_backward(a, L, S, E, scale, causal);
#endif
  if (native_bf16_products()) backward(a, L, S, E, scale, causal);
  else backward_widened(a, L, S, E, scale, causal);
}

}  // namespace hcops::ops
