// Attention of one slice (ops/attention.h): query blocks against all keys,
// the products on the GEMM engine, the softmax on the operators' kernels.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gemm/fp32_math.h"
#include "gemm/gemm.h"
#include "ops/softmax.h"

namespace hcops::ops {

namespace {

// Row-major C (m x n, ldc) = alpha op(A) op(B) + beta C, on the column-major
// engine as C^T = op(B)^T op(A)^T; op(X) = X^T where tx. f32 in the
// HCOPS_FP32_MATH mode in effect, as every f32 GEMM of HCOps.
void rm_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
             const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  GemmArgs<Sgemm> g{tb ? Trans::T : Trans::N, ta ? Trans::T : Trans::N, n, m, k, alpha, b, ldb, a, lda, beta, c,
                    ldc};
  gemm_fp32(g);
}

// Per-thread buffers, grown as needed and kept: a slice's call allocates
// nothing after the first.
struct Buffers {
  std::vector<float> s, p, dp, ds;       // query_block(S) x S
  std::vector<float> q, k, v, dout, out;  // bf16 slices widened (L or S) x E
  std::vector<float> dk, dv;             // S x E accumulators
};
Buffers &buffers() {
  thread_local Buffers b;
  return b;
}

float *sized(std::vector<float> &v, int64_t n) {
  if (v.size() < size_t(n)) v.resize(size_t(n));
  return v.data();
}

// Scores of query rows [i0, i0 + qb) into s (qb x S), causal mask applied,
// and their softmax into p.
void scores(const float *q, int64_t ldq, const float *k, int64_t ldk, int64_t i0, int64_t qb, int64_t S, int64_t E,
            float scale, bool causal, float *s, float *p) {
  rm_gemm(false, true, qb, S, E, scale, q + i0 * ldq, ldq, k, ldk, 0.0f, s, S);
  if (causal)
    for (int64_t r = 0; r < qb; ++r)
      std::fill(s + r * S + std::min(S, i0 + r + 1), s + (r + 1) * S, -std::numeric_limits<float>::infinity());
  softmax_forward(s, p, qb, S, false);
}

void forward_f32(const float *q, int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv, float *out,
                 int64_t ldo, float *lse, int64_t ld_lse, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  Buffers &buf = buffers();
  const int64_t qb_max = query_block(S);
  float *s = sized(buf.s, qb_max * S), *p = sized(buf.p, qb_max * S);
  for (int64_t i0 = 0; i0 < L; i0 += qb_max) {
    const int64_t qb = std::min(qb_max, L - i0);
    scores(q, ldq, k, ldk, i0, qb, S, E, scale, causal, s, p);
    // logsumexp = s_max + log(sum exp(s - s_max)) = s_max - log(p at s_max):
    // p there is 1 / sum, so its log is as accurate as the sum.
    for (int64_t r = 0; r < qb; ++r) {
      const float *sr = s + r * S;
      float m = sr[0];
      for (int64_t j = 1; j < S; ++j) m = sr[j] > m ? sr[j] : m;  // vectorises; NaN: see below
      int64_t j = 0;
      while (j < S && sr[j] != m) ++j;
      // A NaN score makes the row's softmax NaN, and its logsumexp.
      lse[(i0 + r) * ld_lse] = j == S || std::isnan(p[r * S + j]) ? std::numeric_limits<float>::quiet_NaN()
                                                                   : m - std::log(p[r * S + j]);
    }
    rm_gemm(false, false, qb, E, S, 1.0f, p, S, v, ldv, 0.0f, out + i0 * ldo, ldo);
  }
}

void backward_f32(const float *q, int64_t ldq, const float *k, int64_t ldk, const float *v, int64_t ldv,
                  const float *dout, int64_t lddo, float *dq, int64_t lddq, float *dk, float *dv, int64_t L, int64_t S,
                  int64_t E, float scale, bool causal) {
  // dk, dv: S x E, contiguous, accumulated over the query blocks.
  Buffers &buf = buffers();
  const int64_t qb_max = query_block(S);
  float *s = sized(buf.s, qb_max * S), *p = sized(buf.p, qb_max * S);
  float *dp = sized(buf.dp, qb_max * S), *ds = sized(buf.ds, qb_max * S);
  for (int64_t i0 = 0; i0 < L; i0 += qb_max) {
    const int64_t qb = std::min(qb_max, L - i0);
    const float beta = i0 == 0 ? 0.0f : 1.0f;
    scores(q, ldq, k, ldk, i0, qb, S, E, scale, causal, s, p);
    rm_gemm(true, false, S, E, qb, 1.0f, p, S, dout + i0 * lddo, lddo, beta, dv, E);          // dV += P^T dO
    rm_gemm(false, true, qb, S, E, 1.0f, dout + i0 * lddo, lddo, v, ldv, 0.0f, dp, S);       // dP = dO V^T
    softmax_backward(dp, p, ds, qb, S, false);                                               // dS
    rm_gemm(false, false, qb, E, S, scale, ds, S, k, ldk, 0.0f, dq + i0 * lddq, lddq);       // dQ = scale dS K
    rm_gemm(true, false, S, E, qb, scale, ds, S, q + i0 * ldq, ldq, beta, dk, E);            // dK += scale dS^T Q
  }
}

void widen(const bf16 *x, int64_t ld, int64_t rows, int64_t E, float *y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < E; ++e) y[r * E + e] = float(x[r * ld + e]);
}

void narrow(const float *x, int64_t rows, int64_t E, bf16 *y, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < E; ++e) y[r * ld + e] = bf16(x[r * E + e]);
}

void copy_rows(const float *x, int64_t rows, int64_t E, float *y, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::copy(x + r * E, x + (r + 1) * E, y + r * ld);
}

}  // namespace

void attention_forward(const AttentionSlice<float> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  forward_f32(a.q, a.ld_q, a.k, a.ld_k, a.v, a.ld_v, a.out, a.ld_out, a.lse, a.ld_lse, L, S, E, scale, causal);
}

void attention_forward(const AttentionSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  Buffers &buf = buffers();
  float *q = sized(buf.q, L * E), *k = sized(buf.k, S * E), *v = sized(buf.v, S * E), *out = sized(buf.out, L * E);
  widen(a.q, a.ld_q, L, E, q);
  widen(a.k, a.ld_k, S, E, k);
  widen(a.v, a.ld_v, S, E, v);
  forward_f32(q, E, k, E, v, E, out, E, a.lse, a.ld_lse, L, S, E, scale, causal);
  narrow(out, L, E, a.out, a.ld_out);
}

void attention_backward(const AttentionGradSlice<float> &a, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal) {
  Buffers &buf = buffers();
  float *dk = sized(buf.dk, S * E), *dv = sized(buf.dv, S * E);
  backward_f32(a.q, a.ld_q, a.k, a.ld_k, a.v, a.ld_v, a.dout, a.ld_dout, a.dq, a.ld_dq, dk, dv, L, S, E, scale,
               causal);
  copy_rows(dk, S, E, a.dk, a.ld_dk);
  copy_rows(dv, S, E, a.dv, a.ld_dv);
}

void attention_backward(const AttentionGradSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
                        bool causal) {
  Buffers &buf = buffers();
  float *q = sized(buf.q, L * E), *k = sized(buf.k, S * E), *v = sized(buf.v, S * E);
  float *dout = sized(buf.dout, L * E), *dq = sized(buf.out, L * E);
  float *dk = sized(buf.dk, S * E), *dv = sized(buf.dv, S * E);
  widen(a.q, a.ld_q, L, E, q);
  widen(a.k, a.ld_k, S, E, k);
  widen(a.v, a.ld_v, S, E, v);
  widen(a.dout, a.ld_dout, L, E, dout);
  backward_f32(q, E, k, E, v, E, dout, E, dq, E, dk, dv, L, S, E, scale, causal);
  narrow(dq, L, E, a.dq, a.ld_dq);
  narrow(dk, S, E, a.dk, a.ld_dk);
  narrow(dv, S, E, a.dv, a.ld_dv);
}

}  // namespace hcops::ops
