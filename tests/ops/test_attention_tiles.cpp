// The fused bf16 attention on AMX tiles (ops/attention_tiles.h) against an
// f64 computation from the same bf16 inputs, forward (output, logsumexp)
// and backward (dQ, dK, dV): on emulated tiles wherever the CPU has
// AVX-512 BF16 (the same code as on the hardware, which the emulation
// follows instruction by instruction), and through the library's entry
// points as the CPU dispatches them (the AMX tiles where it has them: the
// route is checked; elsewhere the GEMM path, checked all the same).
//
// Cases: no queries (dK and dV zero), odd query counts (a last block of 1-31 rows), head sizes that are
// not multiples of 16 or 32 (5, 33, 40, 72), causal (also with fewer
// queries than keys), a negative and a zero scale (applied before the
// softmax), a large one (scores over hundreds of units), rows strided as timm's views into one
// qkv tensor, a logsumexp of stride 2; a NaN query (its row NaN, the rest
// right); a logsumexp 5 above and 5 below the rows' own (P as computed, D
// from dO and O); bytes past each output row left alone. Bound: each result within
// 2^-7 of its tensor's largest |value| (P and dS are rounded to bf16
// before the products that take them, 2^-9 each, and the results once);
// the logsumexp within 1e-4 (f32 scores).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention_tiles_emulated.h"
#include "common/cpu_features.h"
#include "common/dtype.h"
#include "ops/attention.h"

namespace {

using hcops::bf16;
using hcops::ops::AttentionGradSlice;
using hcops::ops::AttentionSlice;

struct Case {
  int64_t L, S, E;
  bool causal;
  float scale;  // NaN: 1 / sqrt(E)
};
const Case kCases[] = {
    {37, 64, 72, false, NAN}, {96, 96, 40, true, 0.2f}, {20, 32, 5, false, -0.25f}, {50, 64, 16, false, 0.0f},
    {1, 32, 8, false, 0.5f},  {256, 256, 64, false, NAN}, {160, 160, 33, true, NAN}, {129, 128, 128, false, 0.1f},
    {40, 64, 24, true, 0.3f},  // causal with fewer queries than keys: top-left, as PyTorch's is_causal
    {64, 64, 16, false, 8.0f},  // scores spread over hundreds: most of exp's range, and under 2^-126
    {0, 32, 8, false, NAN},     // no queries: dK and dV are zero, and nothing else is written
};

// A slice's data: q, k, v and dO in rows of stride 3E + 1 (a view into a
// wider tensor), outputs with 3 guard elements past each row.
struct Slice {
  int64_t L, S, E, ld, ld_out;
  std::vector<bf16> q, k, v, dout, out, dq, dk, dv;
  std::vector<float> lse;  // stride 2
  static constexpr uint16_t kGuard = 0x7fa5;  // a NaN no result is
  Slice(int64_t L_, int64_t S_, int64_t E_, uint32_t seed) : L(L_), S(S_), E(E_), ld(3 * E_ + 1), ld_out(E_ + 3) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    auto fill = [&](std::vector<bf16> &x, int64_t rows) {
      x.assign(size_t(rows * ld), bf16(0.0f));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t e = 0; e < E; ++e) x[size_t(r * ld + e)] = bf16(u(rng));
    };
    fill(q, L), fill(k, S), fill(v, S), fill(dout, L);
    auto guarded = [&](std::vector<bf16> &x, int64_t rows) {
      bf16 g;
      g.bits = kGuard;
      x.assign(size_t(rows * ld_out), g);
    };
    guarded(out, L), guarded(dq, L), guarded(dk, S), guarded(dv, S);
    lse.assign(size_t(2 * L), 0.0f);
  }
  AttentionSlice<bf16> fwd() {
    return {q.data(), k.data(), v.data(), ld, ld, ld, out.data(), ld_out, lse.data(), 2};
  }
  AttentionGradSlice<bf16> bwd(const float *given_lse) {
    return {q.data(),  k.data(),  v.data(),  dout.data(), ld,     ld,        ld,        ld,
            given_lse, 2,         dq.data(), dk.data(),   dv.data(), ld_out, ld_out,    ld_out,
            out.data(), ld_out};
  }
  bool guards_intact() const {
    for (const std::vector<bf16> *x : {&out, &dq, &dk, &dv})
      for (size_t i = 0; i < x->size(); ++i)
        if (int64_t(i % size_t(ld_out)) >= E && (*x)[i].bits != kGuard) return false;
    return true;
  }
};

// The f64 attention of a slice from its bf16 values: scores scale q k^T
// (causal: top-left), P from the logsumexp `lse` (its own when null),
// the output, and the gradients with D = rowsum(dO O) for the given O.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
  Reference(const Slice &s, float scale, bool causal, const float *given_lse, const std::vector<bf16> *given_out) {
    const int64_t L = s.L, S = s.S, E = s.E;
    out.assign(size_t(L * E), 0), lse.assign(size_t(L), 0), dq.assign(size_t(L * E), 0);
    dk.assign(size_t(S * E), 0), dv.assign(size_t(S * E), 0);
    std::vector<double> p(static_cast<size_t>(S)), dp(static_cast<size_t>(S));
    auto at = [&](const std::vector<bf16> &x, int64_t r, int64_t e) { return double(float(x[size_t(r * s.ld + e)])); };
    for (int64_t i = 0; i < L; ++i) {
      double m = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += at(s.q, i, e) * at(s.k, j, e);
        p[size_t(j)] = causal && j > i ? -INFINITY : double(scale) * d;
        m = std::max(m, p[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += std::exp(p[size_t(j)] - m);
      lse[size_t(i)] = m + std::log(sum);
      const double l = given_lse ? double(given_lse[2 * i]) : lse[size_t(i)];
      for (int64_t j = 0; j < S; ++j) p[size_t(j)] = std::exp(p[size_t(j)] - l);
      for (int64_t e = 0; e < E; ++e) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += p[size_t(j)] * at(s.v, j, e);
        out[size_t(i * E + e)] = o;
      }
      double D = 0;
      for (int64_t e = 0; e < E; ++e)
        D += at(s.dout, i, e) * (given_out ? double(float((*given_out)[size_t(i * s.ld_out + e)])) : out[size_t(i * E + e)]);
      for (int64_t j = 0; j < S; ++j) {
        double g = 0;
        for (int64_t e = 0; e < E; ++e) g += at(s.dout, i, e) * at(s.v, j, e);
        dp[size_t(j)] = p[size_t(j)] * (g - D);  // dS
        for (int64_t e = 0; e < E; ++e) {
          dv[size_t(j * E + e)] += p[size_t(j)] * at(s.dout, i, e);
          dk[size_t(j * E + e)] += double(scale) * dp[size_t(j)] * at(s.q, i, e);
          dq[size_t(i * E + e)] += double(scale) * dp[size_t(j)] * at(s.k, j, e);
        }
      }
    }
  }
};

// max |got - ref| <= tol max |ref| over rows x E (got's row stride ld);
// with skip_row, that row is NaN in got and left out.
bool close(const char *what, const std::vector<bf16> &got, int64_t ld, const std::vector<double> &ref, int64_t rows,
           int64_t E, double tol, int64_t skip_row = -1) {
  double big = 0, err = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < E; ++e) {
      if (r == skip_row) continue;
      big = std::max(big, std::fabs(ref[size_t(r * E + e)]));
      const double d = std::fabs(double(float(got[size_t(r * ld + e)])) - ref[size_t(r * E + e)]);
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
  const bool ok = err <= tol * std::max(big, 1e-30);
  if (!ok) std::printf("  %s: max error %.3g against %.3g of the largest value %.3g\n", what, err, tol * big, big);
  return ok;
}

struct Runner {
  void (*forward)(const AttentionSlice<bf16> &, int64_t, int64_t, int64_t, float, bool);
  void (*backward)(const AttentionGradSlice<bf16> &, int64_t, int64_t, int64_t, float, bool);
};

constexpr double kTol = 0x1p-7;

bool run_case(const Runner &run, const Case &c, uint32_t seed) {
  const float scale = std::isnan(c.scale) ? float(1.0 / std::sqrt(double(c.E))) : c.scale;
  Slice s(c.L, c.S, c.E, seed);
  run.forward(s.fwd(), c.L, c.S, c.E, scale, c.causal);
  run.backward(s.bwd(s.lse.data()), c.L, c.S, c.E, scale, c.causal);
  const Reference ref(s, scale, c.causal, nullptr, nullptr);
  bool ok = true;
  double lse_err = 0;
  for (int64_t i = 0; i < c.L; ++i)
    lse_err = std::max(lse_err, std::fabs(double(s.lse[size_t(2 * i)]) - ref.lse[size_t(i)]) /
                                    std::max(1.0, std::fabs(ref.lse[size_t(i)])));
  if (!(lse_err <= 1e-4)) {
    std::printf("  lse: relative error %.3g\n", lse_err);
    ok = false;
  }
  ok &= close("out", s.out, s.ld_out, ref.out, c.L, c.E, kTol);
  ok &= close("dq", s.dq, s.ld_out, ref.dq, c.L, c.E, kTol);
  ok &= close("dk", s.dk, s.ld_out, ref.dk, c.S, c.E, kTol);
  ok &= close("dv", s.dv, s.ld_out, ref.dv, c.S, c.E, kTol);
  if (!s.guards_intact()) {
    std::printf("  a result was written past its row\n");
    ok = false;
  }
  std::printf("%s: L %ld S %ld E %ld%s scale %g\n", ok ? "ok" : "FAILED", long(c.L), long(c.S), long(c.E),
              c.causal ? " causal" : "", double(scale));
  return ok;
}

// A NaN in one query: that row of the output NaN, every other right.
bool run_nan_query(const Runner &run) {
  Slice s(40, 64, 24, 7);
  s.q[size_t(5 * s.ld + 3)] = bf16(NAN);
  const float scale = 0.3f;
  run.forward(s.fwd(), s.L, s.S, s.E, scale, false);
  bool nan_row = true;
  for (int64_t e = 0; e < s.E; ++e) nan_row &= std::isnan(float(s.out[size_t(5 * s.ld_out + e)]));
  const Reference ref(s, scale, false, nullptr, nullptr);
  const bool ok = nan_row && close("out", s.out, s.ld_out, ref.out, s.L, s.E, kTol, 5);
  std::printf("%s: a NaN query gives a NaN row, the others right\n", ok ? "ok" : "FAILED");
  return ok;
}

// A logsumexp 5 above or below the rows' own: P = exp(s - lse) as computed
// (not renormalised) and D from dO and the given output, as PyTorch's kernel.
bool run_foreign_lse(const Runner &run, float shift) {
  Slice s(33, 64, 16, 11);
  const float scale = 0.25f;
  run.forward(s.fwd(), s.L, s.S, s.E, scale, false);
  std::vector<float> lse = s.lse;
  for (int64_t i = 0; i < s.L; ++i) lse[size_t(2 * i)] += shift;
  run.backward(s.bwd(lse.data()), s.L, s.S, s.E, scale, false);
  const Reference ref(s, scale, false, lse.data(), &s.out);
  bool ok = close("dq", s.dq, s.ld_out, ref.dq, s.L, s.E, kTol);
  ok &= close("dk", s.dk, s.ld_out, ref.dk, s.S, s.E, kTol);
  ok &= close("dv", s.dv, s.ld_out, ref.dv, s.S, s.E, kTol);
  std::printf("%s: a logsumexp %g from the rows' own\n", ok ? "ok" : "FAILED", double(shift));
  return ok;
}

int run_all(const Runner &run) {
  int failures = 0;
  uint32_t seed = 1;
  for (const Case &c : kCases) failures += !run_case(run, c, seed++);
  failures += !run_nan_query(run);
  failures += !run_foreign_lse(run, 5.0f);
  failures += !run_foreign_lse(run, -5.0f);
  return failures;
}

void test_emulated(void **) {
  using namespace hcops;
  if (!features_usable(kAvx512f | kAvx512bw | kAvx512vl | kAvx512dq | kFma | kAvx512Bf16)) {
    std::printf("SKIP: the emulated tiles' code needs AVX-512 with BF16, which this CPU lacks\n");
    skip();
  }
  for (const Case &c : kCases) assert_true(attention_emulated::takes(c.S));
  assert_false(attention_emulated::takes(48));
  const long before = attention_emulated::dpbf16ps_executed();
  assert_int_equal(run_all({attention_emulated::forward, attention_emulated::backward}), 0);
  assert_true(attention_emulated::dpbf16ps_executed() > before);  // the tiles did the products
}

void forward_dispatched(const AttentionSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  hcops::ops::attention_forward(a, L, S, E, scale, causal);
}
void backward_dispatched(const AttentionGradSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
                         bool causal) {
  hcops::ops::attention_backward(a, L, S, E, scale, causal);
}

void test_dispatched(void **) {
  const std::string route = hcops::ops::attention_bf16_route(64);
  std::printf("bf16 slices of 64 keys run as: %s\n", route.c_str());
  // Where the amx family serves the bf16 GEMMs, slices of whole tiles of
  // keys run fused on the tiles, and others on the engine's GEMMs.
  if (route == "amx_tiles") assert_string_equal(hcops::ops::attention_bf16_route(48), "bf16");
  assert_int_equal(run_all({forward_dispatched, backward_dispatched}), 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_emulated), cmocka_unit_test(test_dispatched)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
