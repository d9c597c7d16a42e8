// GeLU (erf and tanh) and SiLU, forward and backward, f32 and bf16, on the
// kernel family ops::ops_table() chose (engine/test_ops_eltwise.sh runs this
// once per family with HCOPS_ISA and passes the family expected as argv[1]),
// against an f64 evaluation of PyTorch 1.13's formulas in forms exact in
// real arithmetic (1 + tanh(u) = 2 / (1 + exp(-2u)), 1 + erf(z) = erfc(-z)).
//
// Bounds: an f32 result is within 6 ulp (erf GeLU) or 4 ulp (tanh GeLU, SiLU)
// of its reference's scale (|ref|, or more where the formula itself is
// ill-conditioned in f32: see Ref below), and of 1e-20 at least; a bf16 result within one bf16 ulp of the reference
// rounded to bf16 (of the same scale where that is larger). NaN where the reference is NaN (PyTorch's:
// gelu(-Inf), silu(-Inf), every backward at +-Inf, tanh-GeLU's backward where
// x^2 overflows f32), the same infinity where it is infinite.
//
// Sizes 0, 1, around every family's vector width, and 1000003; out of
// place and in place; nothing past n written (a masked tail must not touch
// the next element).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "ops/eltwise.h"
#include "ops/transpose.h"
#include "ops/family.h"
#include "common/fenced.h"

namespace {

using hcops::bf16;
using hcops::ops::GeluApprox;

const char *g_expected_family = nullptr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

// ---- the f64 reference --------------------------------------------------
// Each returns the value and the scale its f32 evaluation's error is
// measured against: |value| where it is a product of well-conditioned
// factors; the sum of the magnitudes of the terms where two terms cancel (the
// backward passes through 0); for the tanh GeLU, times (1 + |2u| (1 - s)),
// the amplification of the rounding of its argument 2u = 2 sqrt(2/pi) (x +
// 0.044715 x^3) in its negative tail x sigmoid(2u).
struct Ref {
  double v, scale;
};

double sig(double x) { return 1 / (1 + std::exp(-x)); }
double tanh_arg(double x) { return 2 * kBeta * (x + kKappa * x * x * x); }

Ref gelu_tanh_ref(double x) {
  const double w = tanh_arg(x), v = x * sig(w);
  return {v, std::fabs(v) * (1 + std::fabs(w) * sig(-w))};
}
Ref gelu_tanh_grad_ref(double x) {
  // PyTorch squares x in f32: beyond sqrt(FLT_MAX) its backward is NaN.
  if (std::fabs(x) > std::sqrt(double(FLT_MAX))) return {std::nan(""), 0};
  const double w = tanh_arg(x);
  const double s = sig(w), c = sig(-w);  // c = 1 - s without cancellation
  const double t = s * c * x * 2 * kBeta * (1 + 3 * kKappa * x * x);
  return {s + t, (std::fabs(s) + std::fabs(t)) * (1 + std::fabs(w))};
}
Ref gelu_erf_ref(double x) {
  const double v = 0.5 * x * std::erfc(-x * M_SQRT1_2);
  return {v, std::fabs(v)};
}
Ref gelu_erf_grad_ref(double x) {
  const double cdf = 0.5 * std::erfc(-x * M_SQRT1_2);
  const double xpdf = x * std::exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
  return {cdf + xpdf, std::fabs(cdf) + std::fabs(xpdf)};
}
Ref silu_ref(double x) {
  const double v = x * sig(x);
  return {v, std::fabs(v)};
}
Ref silu_grad_ref(double x) {
  const double s = sig(x), t = s * x * sig(-x);
  return {s + t, std::fabs(s) + std::fabs(t)};
}

// Below kFloor (1e-20, far under anything f32 training resolves) results are
// compared absolutely: sigmoid(x < -88.7) is 0 where exp(-x) overflows (its
// true value, < 3e-39, is a denormal).
constexpr double kFloor = 1e-20;

struct Fn {
  const char *name;
  bool backward;
  int which;  // 0 gelu erf, 1 gelu tanh, 2 silu
  Ref (*ref)(double);
  double ulps;  // f32 bound, in ulp of max(scale, kFloor)
};

const Fn kFns[] = {
    {"gelu(erf)", false, 0, gelu_erf_ref, 6},
    {"gelu(erf) backward", true, 0, gelu_erf_grad_ref, 6},
    {"gelu(tanh)", false, 1, gelu_tanh_ref, 4},
    {"gelu(tanh) backward", true, 1, gelu_tanh_grad_ref, 4},
    {"silu", false, 2, silu_ref, 4},
    {"silu backward", true, 2, silu_grad_ref, 4},
};

// ---- calls --------------------------------------------------------------
template <typename T>
void run(const Fn &f, const T *dy, const T *x, T *out, int64_t n) {
  const GeluApprox a = f.which == 1 ? GeluApprox::tanh : GeluApprox::none;
  if (!f.backward) {
    if (f.which == 2) hcops::ops::silu_forward(x, out, n);
    else hcops::ops::gelu_forward(x, out, n, a);
  } else {
    if (f.which == 2) hcops::ops::silu_backward(dy, x, out, n);
    else hcops::ops::gelu_backward(dy, x, out, n, a);
  }
}

// ---- comparisons ----------------------------------------------------------
double ulp_f32(double a) {
  a = std::fabs(a);
  if (a < FLT_MIN) return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(a) - 23);
}
double ulp_bf16(double a) {
  a = std::fabs(a);
  if (a < FLT_MIN) return std::ldexp(1.0, -133);
  return std::ldexp(1.0, std::ilogb(a) - 7);
}

struct Check {
  double worst = 0;  // in the bound's units
  double worst_x = 0, worst_got = 0, worst_ref = 0;
  int64_t bad = 0;
};

// Special values must match exactly in kind: NaN for NaN, the same infinity.
bool special_ok(double got, double ref) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  return std::isfinite(got);
}

void check_f32(const Fn &f, double x, double dy, float got, Check &c) {
  const Ref r = f.ref(x);
  const double ref = f.backward ? r.v * dy : r.v;
  const double scale = f.backward ? r.scale * std::fabs(dy) : r.scale;
  double e;
  if (!special_ok(got, ref)) e = kInf;
  else if (!std::isfinite(ref)) e = 0;
  else e = std::fabs(got - ref) / ulp_f32(std::max(scale, kFloor)) / f.ulps;
  if (e > 1) ++c.bad;
  if (e > c.worst) c = {e, x, got, ref, c.bad};
}

void check_bf16(const Fn &f, double x, double dy, bf16 got_b, Check &c) {
  const Ref r = f.ref(x);
  const double ref = f.backward ? r.v * dy : r.v;
  const double scale = f.backward ? r.scale * std::fabs(dy) : r.scale;
  const double got = float(got_b);
  double e;
  if (!special_ok(got, ref)) e = kInf;
  else if (!std::isfinite(ref)) e = 0;
  else {
    // The reference rounded to bf16 (through f32: exact for f32-range values
    // up to the double rounding, which the 1-ulp allowance covers).
    const double rb = float(bf16(float(ref)));
    e = std::fabs(got - rb) / ulp_bf16(std::max(std::max(std::fabs(rb), scale), kFloor));
  }
  if (e > 1) ++c.bad;
  if (e > c.worst) c = {e, x, got, ref, c.bad};
}

// ---- inputs -----------------------------------------------------------------
std::vector<float> specials() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1e-40f,
                          -1e-40f,
                          1e-30f,
                          -1e-30f,
                          1e-7f,
                          -1e-7f,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          FLT_MAX,
                          -FLT_MAX,
                          FLT_MIN,
                          -FLT_MIN};
  // Around the range splits and saturation points of exp, tanh, erf and
  // erfc (the erf GeLU's erfc argument is x / sqrt 2), sigmoid's exp on the
  // families without vscalefps (vmath.h's exp_for_sigmoid: 0 below -86.99,
  // clamped at -87.5 and 89, 2^n in one step up to 88.38), the zero
  // crossings of the backward, and where x^2 and x^3 overflow f32.
  const float pts[] = {0.5f,    0.625f,  0.75179f, 0.921875f, 1.0f,   1.2785f, 1.30372f, 2.5f,   3.0f,   3.92f,
                       5.544f,  6.364f,  9.0f,     10.0f,     14.0f,  20.0f,   44.0f,    86.99f, 87.33f, 87.5f,
                       87.68f,  88.38f,  88.72f,   89.0f,     100.0f, 1e10f,   6.9e12f,  7.1e12f, 1e13f,  1e15f,
                       1.8e19f, 1.9e19f, 1e20f,    1e30f};
  for (float p : pts)
    for (float d : {-1.0f, 1.0f})
      for (float y : {std::nextafter(p, 0.0f), p, std::nextafter(p, inf)}) v.push_back(d * y);
  return v;
}

// Uniform over [-12, 12] (where the functions bend) and log-uniform
// magnitudes in [1e-30, 1e20], both signs, with the specials sprinkled in.
std::vector<float> random_inputs(int64_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> lin(-12.0f, 12.0f), lg(-30.0f, 20.0f);
  std::vector<float> sp = specials();
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned k = rng() % 16;
    if (k < 10) v[i] = lin(rng);
    else if (k < 15) v[i] = (rng() & 1 ? -1.0f : 1.0f) * std::pow(10.0f, lg(rng));
    else v[i] = sp[rng() % sp.size()];
  }
  return v;
}

// ---- the runs ---------------------------------------------------------------
constexpr int kGuard = 64;  // elements past n that must stay untouched
constexpr unsigned char kSentinel = 0xa5;

enum class Place { out, in_x, in_dy };

template <typename T>
T to(float v);
template <>
float to<float>(float v) {
  return v;
}
template <>
bf16 to<bf16>(float v) {
  return bf16(v);
}

template <typename T>
void one_run(const Fn &f, const std::vector<float> &xs, const std::vector<float> &dys, Place place, Check &c,
             int64_t &guard_bad) {
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<T> x(n + kGuard), dy(n + kGuard), out(n + kGuard);
  for (int64_t i = 0; i < n; ++i) x[i] = to<T>(xs[i]), dy[i] = to<T>(dys[i]);
  std::vector<double> xd(n), dyd(n);  // the inputs as the kernel sees them
  for (int64_t i = 0; i < n; ++i) xd[i] = double(float(x[i])), dyd[i] = double(float(dy[i]));
  T *dst = out.data();
  if (place == Place::in_x) dst = x.data();
  if (place == Place::in_dy) dst = dy.data();
  // The inputs past n are 0; the guard's bytes, a value no kernel computes.
  std::memset(static_cast<void *>(dst + n), kSentinel, kGuard * sizeof(T));
  run<T>(f, dy.data(), x.data(), dst, n);
  const unsigned char *g = reinterpret_cast<const unsigned char *>(dst + n);
  for (size_t b = 0; b < kGuard * sizeof(T); ++b) guard_bad += g[b] != kSentinel;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 4) check_f32(f, xd[i], dyd[i], dst[i], c);
    else check_bf16(f, xd[i], dyd[i], dst[i], c);
  }
}

template <typename T>
void test_fn(const Fn &f) {
  std::mt19937 rng(1234);
  std::vector<int64_t> sizes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1000003};
  Check c;
  int64_t guard_bad = 0;
  const std::vector<float> sp = specials();
  std::vector<float> dsp(sp.size());
  std::uniform_real_distribution<float> dyd(-2.0f, 2.0f);
  for (float &d : dsp) d = dyd(rng);
  std::vector<Place> places = {Place::out, Place::in_x};
  if (f.backward) places.push_back(Place::in_dy);
  for (Place p : places) {
    one_run<T>(f, sp, dsp, p, c, guard_bad);
    for (int64_t n : sizes) {
      std::vector<float> xs = random_inputs(n, rng), dys(n);
      for (float &d : dys) d = dyd(rng);
      one_run<T>(f, xs, dys, p, c, guard_bad);
    }
  }
  std::printf("%-20s %-4s worst %.3f of the bound (x = %.9g: got %.9g, ref %.17g)\n", f.name,
              sizeof(T) == 4 ? "f32" : "bf16", c.worst, c.worst_x, c.worst_got, c.worst_ref);
  assert_int_equal(guard_bad, 0);
  assert_int_equal(c.bad, 0);
}

void test_family(void **) {
  std::printf("operator family: %s\n", hcops::ops::ops_family());
  if (g_expected_family) assert_string_equal(hcops::ops::ops_family(), g_expected_family);
}

#define HCOPS_TEST_FN(name, i)                                 \
  void test_##name##_f32(void **) { test_fn<float>(kFns[i]); } \
  void test_##name##_bf16(void **) { test_fn<bf16>(kFns[i]); }
HCOPS_TEST_FN(gelu_erf, 0)
HCOPS_TEST_FN(gelu_erf_backward, 1)
HCOPS_TEST_FN(gelu_tanh, 2)
HCOPS_TEST_FN(gelu_tanh_backward, 3)
HCOPS_TEST_FN(silu, 4)
HCOPS_TEST_FN(silu_backward, 5)

// The cheap forms (x sigmoid(2u), erfc) must agree with the textbook ones
// where those are accurate: a guard against a formula slip shared by the
// kernel and the reference above.
void test_reference_forms(void **) {
  for (double x = -3; x <= 3; x += 0.125) {
    const double u = kBeta * (x + kKappa * x * x * x);
    assert_true(std::fabs(gelu_tanh_ref(x).v - 0.5 * x * (1 + std::tanh(u))) < 1e-15);
    const double dt =
        0.5 * (1 + std::tanh(u)) + 0.5 * x * (1 - std::tanh(u) * std::tanh(u)) * kBeta * (1 + 3 * kKappa * x * x);
    assert_true(std::fabs(gelu_tanh_grad_ref(x).v - dt) < 1e-14);
    assert_true(std::fabs(gelu_erf_ref(x).v - 0.5 * x * (1 + std::erf(x * M_SQRT1_2))) < 1e-15);
    const double s = 1 / (1 + std::exp(-x));
    assert_true(std::fabs(silu_grad_ref(x).v - s * (1 + x * (1 - s))) < 1e-14);
  }
}

// to_bf16 (attention's bf16 operands): bit for bit common/dtype.h's
// bf16(float) (round to nearest even, NaN quietened, denormals rounded,
// not flushed) on every length to 100 (vector bodies and masked tails),
// never past n.
void test_to_bf16(void **) {
  std::mt19937 rng(7);
  std::vector<float> x(100);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t bits = rng();
    if (i % 5 == 1) bits &= 0x807fffffu;  // denormal (or zero)
    std::memcpy(&x[i], &bits, sizeof bits);
  }
  x[3] = std::numeric_limits<float>::infinity();
  x[4] = -std::numeric_limits<float>::quiet_NaN();
  x[7] = std::numeric_limits<float>::signaling_NaN();
  x[8] = 1.0f + 0x1p-8f;  // a tie: to even
  for (size_t n = 0; n <= x.size(); ++n) {
    std::vector<hcops::bf16> y(n + 1, hcops::bf16(5.0f));
    hcops::ops::to_bf16(x.data(), y.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i)
      if (y[i].bits != hcops::bf16(x[i]).bits)
        fail_msg("to_bf16(%a) = 0x%04x, bf16(float) 0x%04x (n=%zu)", double(x[i]), y[i].bits,
                 hcops::bf16(x[i]).bits, n);
    assert_true(float(y[n]) == 5.0f);
  }
}

// from_bf16 (attention's bf16 slices widened): exactly float(bf16) on every
// bit pattern's class (NaN payloads, Inf, denormals, -0) and every length to
// 100 (vector bodies and masked tails), never past n: the input ends at an
// inaccessible page, the output has a sentinel after it.
void test_from_bf16(void **) {
  std::mt19937 rng(11);
  std::vector<hcops::bf16> x(100);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i].bits = uint16_t(rng());
    if (i % 5 == 1) x[i].bits &= 0x807fu;  // denormal (or zero)
  }
  x[3].bits = 0x7f80;  // Inf
  x[4].bits = 0xffc1;  // -NaN with a payload
  x[7].bits = 0x7f81;  // signalling NaN: widened as it is, not quietened
  x[9].bits = 0x8000;  // -0
  for (size_t n = 0; n <= x.size(); ++n) {
    std::vector<float> y(n + 1, 5.0f);
    FencedArray<hcops::bf16> fx(n);
    std::copy(x.begin(), x.begin() + long(n), fx.data);
    hcops::ops::from_bf16(fx.data, y.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      uint32_t got, want = uint32_t(x[i].bits) << 16;
      std::memcpy(&got, &y[i], sizeof got);
      if (got != want) fail_msg("from_bf16(0x%04x) = 0x%08x, want 0x%08x (n=%zu)", x[i].bits, got, want, n);
    }
    assert_true(y[n] == 5.0f);
  }
}

// A float of random bits, one in seven with its exponent cleared (a
// denormal or zero): NaN, Inf, -0 and denormals all come up.
float random_bits_float(std::mt19937 &rng) {
  uint32_t bits = rng();
  if (bits % 7 == 1) bits &= 0x807fffffu;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// A result's bits as wanted: equal, or both NaN (which operand's payload a
// NaN result carries is the compiler's choice of operand order, as in
// PyTorch's own loops).
bool same_bits_or_nan(uint32_t got, uint32_t want) {
  auto is_nan = [](uint32_t u) { return (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu); };
  return is_nan(want) ? is_nan(got) : got == want;
}

// x, y and out of a binary_rows check, each in f32 and in bf16 (x and y
// random bits, their bf16 copies rounded from them; out filled with 5).
struct BinaryData {
  std::vector<float> xf, yf, of;
  std::vector<bf16> xb, yb, ob;
  BinaryData(size_t nx, size_t ny, size_t nout, std::mt19937 &rng)
      : xf(nx), yf(ny), of(nout, 5.0f), xb(nx), yb(ny), ob(nout, bf16(5.0f)) {
    for (size_t i = 0; i < nx; ++i) xf[i] = random_bits_float(rng), xb[i] = bf16(xf[i]);
    for (size_t i = 0; i < ny; ++i) yf[i] = random_bits_float(rng), yb[i] = bf16(yf[i]);
  }
  // The arguments for these types, rows `cols` long.
  hcops::ops::BinaryRows args(hcops::ops::BinaryOp op, hcops::Dtype tx, hcops::Dtype ty, hcops::Dtype to,
                              int64_t cols, int64_t x_every, int64_t y_every, int64_t x_ld, int64_t y_ld) {
    using hcops::Dtype;
    return {op,
            tx,
            ty,
            to,
            tx == Dtype::bf16 ? static_cast<const void *>(xb.data()) : xf.data(),
            ty == Dtype::bf16 ? static_cast<const void *>(yb.data()) : yf.data(),
            to == Dtype::bf16 ? static_cast<void *>(ob.data()) : of.data(),
            cols,
            x_every,
            y_every,
            x_ld,
            y_ld};
  }
};

// binary_rows (PyTorch's add and mul of f32 / bf16 operands): bit for bit
// the f32 sum or product of the widened operands, rounded once by
// bf16(float) into a bf16 result, for every pairing of types, rows of every
// length to 70 (vector bodies, masked tails), an operand broadcast over
// rows (every = 3) and with a row stride wider than its rows; rows [r0, r1)
// written and no other, nothing past the last. Random bit patterns: NaN,
// Inf, -0 and denormals included (a NaN result: any NaN).
void test_binary_rows(void **) {
  using hcops::Dtype;
  using hcops::ops::BinaryOp;
  std::mt19937 rng(11);
  const int64_t rows = 6, every_y = 3;
  for (int64_t cols = 1; cols <= 70; ++cols)
    for (int types = 0; types < 8; ++types)
      for (BinaryOp op : {BinaryOp::add, BinaryOp::mul}) {
        const Dtype tx = types & 4 ? Dtype::bf16 : Dtype::f32, ty = types & 2 ? Dtype::bf16 : Dtype::f32,
                    to = types & 1 ? Dtype::bf16 : Dtype::f32;
        const int64_t ld_x = cols, ld_y = cols + 5;  // y: rows 5 elements apart beyond their length
        BinaryData d(size_t(rows * ld_x), size_t(rows / every_y * ld_y), size_t(rows * cols + 1), rng);
        const auto &xf = d.xf, &yf = d.yf, &of = d.of;
        const auto &xb = d.xb, &yb = d.yb, &ob = d.ob;
        const hcops::ops::BinaryRows b = d.args(op, tx, ty, to, cols, 1, every_y, ld_x, ld_y);
        hcops::ops::binary_rows(b, 1, rows);  // row 0 left alone
        for (int64_t r = 0; r <= rows; ++r)  // row `rows`: the element past the last row
          for (int64_t c = 0; c < (r < rows ? cols : 1); ++c) {
            const size_t o = size_t(r * cols + c);
            const bool written = r >= 1 && r < rows;
            float want = 5.0f;
            if (written) {
              const float x = tx == Dtype::bf16 ? float(xb[size_t(r * ld_x + c)]) : xf[size_t(r * ld_x + c)];
              const size_t iy = size_t(r / every_y * ld_y + c);
              const float y = ty == Dtype::bf16 ? float(yb[iy]) : yf[iy];
              want = op == BinaryOp::add ? x + y : x * y;
            }
            const uint32_t got_bits = to == Dtype::bf16 ? uint32_t(ob[o].bits) << 16 : [&] {
              uint32_t u;
              std::memcpy(&u, &of[o], sizeof u);
              return u;
            }();
            uint32_t want_bits;
            if (to == Dtype::bf16 && written) want_bits = uint32_t(bf16(want).bits) << 16;
            else if (to == Dtype::bf16) want_bits = uint32_t(bf16(5.0f).bits) << 16;
            else std::memcpy(&want_bits, &want, sizeof want_bits);
            if (!same_bits_or_nan(got_bits, want_bits))
              fail_msg("binary_rows %s types %d cols %ld: element (%ld, %ld) 0x%08x, want 0x%08x",
                       op == BinaryOp::add ? "add" : "mul", types, long(cols), long(r), long(c), got_bits, want_bits);
          }
      }
}

// binary_rows with y transposed (BinaryRows::y_batch_rows: the residual
// stream's swapped layout against a contiguous operand): bit for bit the
// same arithmetic as the rows' case, for every pairing of types, batches of
// rows that are and are not multiples of the transposing tile, rows longer
// than the buffer's columns (256 f32, 512 bf16), y's columns further apart than
// its batch of rows and its batches further apart than their extent; rows
// [r0, r1) starting and ending inside batches written and no other.
void test_binary_rows_y_transposed(void **) {
  using hcops::Dtype;
  using hcops::ops::BinaryOp;
  std::mt19937 rng(12);
  struct Case {
    int64_t batch_rows, cols, r0, r1;
  };
  const Case cases[] = {{1, 5, 0, 3}, {5, 1, 2, 13}, {33, 17, 1, 99}, {32, 64, 0, 96}, {70, 300, 3, 137}, {7, 513, 4, 20}};
  const int64_t batches = 3;
  for (const Case &k : cases)
    for (int types = 0; types < 8; ++types)
      for (BinaryOp op : {BinaryOp::add, BinaryOp::mul}) {
        const Dtype tx = types & 4 ? Dtype::bf16 : Dtype::f32, ty = types & 2 ? Dtype::bf16 : Dtype::f32,
                    to = types & 1 ? Dtype::bf16 : Dtype::f32;
        const int64_t rows = batches * k.batch_rows, ld_x = k.cols + 2;
        const int64_t y_ld = k.batch_rows + 3, y_batch = k.cols * y_ld + 7;
        BinaryData d(size_t(rows * ld_x), size_t(batches * y_batch), size_t(rows * k.cols + 1), rng);
        const auto &xf = d.xf, &yf = d.yf, &of = d.of;
        const auto &xb = d.xb, &yb = d.yb, &ob = d.ob;
        hcops::ops::BinaryRows b = d.args(op, tx, ty, to, k.cols, 1, 1, ld_x, y_ld);
        b.y_batch_rows = k.batch_rows;
        b.y_batch_stride = y_batch;
        const int64_t r1 = std::min(k.r1, rows);
        hcops::ops::binary_rows(b, k.r0, r1);
        for (int64_t r = 0; r <= rows; ++r)
          for (int64_t c = 0; c < (r < rows ? k.cols : 1); ++c) {
            const size_t o = size_t(r * k.cols + c);
            const bool written = r >= k.r0 && r < r1;
            float want = 5.0f;
            if (written) {
              const size_t ix = size_t(r * ld_x + c);
              const float x = tx == Dtype::bf16 ? float(xb[ix]) : xf[ix];
              const size_t iy = size_t(r / k.batch_rows * y_batch + c * y_ld + r % k.batch_rows);
              const float y = ty == Dtype::bf16 ? float(yb[iy]) : yf[iy];
              want = op == BinaryOp::add ? x + y : x * y;
            }
            uint32_t got_bits, want_bits;
            if (to == Dtype::bf16) {
              got_bits = uint32_t(ob[o].bits) << 16;
              want_bits = uint32_t(bf16(want).bits) << 16;
            } else {
              std::memcpy(&got_bits, &of[o], sizeof got_bits);
              std::memcpy(&want_bits, &want, sizeof want_bits);
            }
            if (!same_bits_or_nan(got_bits, want_bits))
              fail_msg("binary_rows (y transposed, %ld rows a batch) %s types %d cols %ld: element (%ld, %ld) "
                       "0x%08x, want 0x%08x",
                       long(k.batch_rows), op == BinaryOp::add ? "add" : "mul", types, long(k.cols), long(r),
                       long(c), got_bits, want_bits);
          }
      }
}

// ops::transpose (the residual stream made contiguous for LayerNorm, and
// binary_rows' transposed operand): every element's bits copied to its
// transposed place for sizes around the in-register blocks (8 x 8 and
// 16 x 16: whole blocks, edges of rows, of columns, of both, and none),
// with row strides wider than the rows on both sides; the padding between
// the destination's rows left alone. f32 and bf16 (random bit patterns).
template <class T>
void check_transpose(std::mt19937 &rng, const char *name) {
  const int64_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 69};
  std::uniform_int_distribution<uint32_t> bits;
  for (int64_t rows : sizes)
    for (int64_t cols : sizes) {
      const int64_t ld_src = rows + 3, ld_dst = cols + 5;
      std::vector<T> src(size_t(std::max<int64_t>(1, cols * ld_src))), dst(size_t(std::max<int64_t>(1, rows * ld_dst)));
      std::vector<uint32_t> raw(src.size());
      for (auto &u : raw) u = bits(rng);
      for (size_t i = 0; i < src.size(); ++i) std::memcpy(&src[i], &raw[i], sizeof(T));
      std::vector<unsigned char> guard(dst.size() * sizeof(T), 0xa5);
      std::memcpy(dst.data(), guard.data(), guard.size());
      hcops::ops::transpose(src.data(), ld_src, dst.data(), ld_dst, rows, cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < ld_dst; ++c) {
          const unsigned char *got = reinterpret_cast<const unsigned char *>(&dst[size_t(r * ld_dst + c)]);
          const unsigned char *want = c < cols ? reinterpret_cast<const unsigned char *>(&src[size_t(c * ld_src + r)])
                                               : guard.data();
          if (std::memcmp(got, want, sizeof(T)) != 0)
            fail_msg("transpose %s %ldx%ld: element (%ld, %ld) %s", name, long(rows), long(cols), long(r), long(c),
                     c < cols ? "differs from the source's (c, r)" : "(padding) was written");
        }
    }
}

void test_transpose(void **) {
  std::mt19937 rng(13);
  check_transpose<float>(rng, "f32");
  check_transpose<bf16>(rng, "bf16");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1) g_expected_family = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family),         cmocka_unit_test(test_reference_forms),
      cmocka_unit_test(test_gelu_erf_f32),   cmocka_unit_test(test_gelu_erf_backward_f32),
      cmocka_unit_test(test_gelu_tanh_f32),  cmocka_unit_test(test_gelu_tanh_backward_f32),
      cmocka_unit_test(test_silu_f32),       cmocka_unit_test(test_silu_backward_f32),
      cmocka_unit_test(test_gelu_erf_bf16),  cmocka_unit_test(test_gelu_erf_backward_bf16),
      cmocka_unit_test(test_gelu_tanh_bf16), cmocka_unit_test(test_gelu_tanh_backward_bf16),
      cmocka_unit_test(test_silu_bf16),      cmocka_unit_test(test_silu_backward_bf16),
      cmocka_unit_test(test_to_bf16),        cmocka_unit_test(test_from_bf16),        cmocka_unit_test(test_binary_rows),
      cmocka_unit_test(test_binary_rows_y_transposed), cmocka_unit_test(test_transpose),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
