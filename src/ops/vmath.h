// Vector math shared by the operators, written once against a kernel
// family's f32 vector traits (kernels/<family>/vec.h, `F`): exp, tanh, erf,
// erfc and sigmoid over whole vectors, branch-free (both sides of a range
// split are computed and selected), f32 arithmetic throughout.
//
// On AVX-512 the exp functions scale by 2^n with vscalefps and the
// reciprocals of sigmoid and erfc take vrcp14ps and a Newton step
// (recip_ge1): tanh GeLU in bf16 went from 25.7-27.4 to 20.3-21.9 cycles a
// vector of 16 in L1, its backward from 34.3 to 26.7-28.9 (Xeon with AMX,
// one core), with tests/ops/test_ops_eltwise's worst errors unchanged.
//
// Accuracy (measured by hand against libm's double functions on every 7th
// float of [-110, 100], each family): exp 1.01 ulp (results within 1 ulp of
// FLT_MAX may round to +Inf), tanh 1.3 ulp, erf 2.5 ulp, erfc 4.4 ulp (down
// to the denormals), sigmoid 1.5 ulp (0 where exp(-x) overflows, x < -88.72,
// instead of a denormal). IEEE special values: exp(+Inf) = +Inf, exp(-Inf)
// = 0, overflow gives +Inf, underflow 0 or a denormal, tanh and erf saturate
// to +-1, odd functions keep -0; NaN propagates through every function.
// tests/ops/test_ops_eltwise checks exp, sigmoid and erfc through the
// GeLU and SiLU kernels.
//
// The polynomial coefficients are minimax-like fits (iteratively reweighted
// least squares at Chebyshev nodes) made for this file, rounded to f32.
#pragma once

#include <type_traits>

// Forced inline: the operators' loops must see the whole computation (a
// call per vector costs more than the math, and GCC's heuristics give up on
// the larger ones).
#define HCOPS_VINLINE inline __attribute__((always_inline))

namespace hcops::ops::vmath {

template <class F>
using V = typename F::V;

// v as a value of its own, rounded: the families build with
// -ffp-contract=fast, which would fuse a product into the add or subtract
// that takes it (one rounding fewer than the code says); the empty asm
// keeps the product. Where results must equal another computation's bits
// (PyTorch's stored product in AdamW; attention's scores scaled as read,
// equal to scaling them first).
template <class V>
HCOPS_VINLINE V rounded(V v) {
#if defined(__aarch64__)
  asm("" : "+w"(v));  // a SIMD&FP register
#else
  asm("" : "+v"(v));  // an SSE/AVX register
#endif
  return v;
}

// Horner evaluation of c[0] + c[1] x + ... + c[N-1] x^(N-1).
template <class F, int N>
HCOPS_VINLINE V<F> poly(V<F> x, const float (&c)[N]) {
  V<F> r = F::set1(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = F::fmadd(r, x, F::set1(c[i]));
  return r;
}

// The rounding error of x2 = fl(x * x): x * x - x2 exactly (for |x| <
// 1e19). One fused multiply-subtract where the family has one (x86 FMA,
// SVE); elsewhere Dekker's split product, exact whether or not fmadd
// fuses (the generic family's translation unit is built without
// contraction: its fmadd is a * b + c on SSE2 and one FMLA on AArch64,
// kernels/generic/vec.h, and nothing else is fused).
template <class F>
HCOPS_VINLINE V<F> square_error(V<F> x, V<F> x2) {
#if defined(__FMA__) || defined(__ARM_FEATURE_SVE)
  return F::fmsub(x, x, x2);
#else
  const V<F> c = F::mul(x, F::set1(4097.0f));  // 2^12 + 1: x = hi + lo, 12 bits each
  const V<F> hi = F::sub(c, F::sub(c, x));
  const V<F> lo = F::sub(x, hi);
  const V<F> e = F::add(F::sub(F::mul(hi, hi), x2), F::mul(F::add(hi, hi), lo));
  return F::add(e, F::mul(lo, lo));
#endif
}

namespace detail {

// Whether the family's traits have the optional scale2 (p 2^n in one
// instruction) and rcp_estimate (a reciprocal to 14 bits): AVX-512.
template <class F, class = void>
struct HasScale2 : std::false_type {};
template <class F>
struct HasScale2<F, decltype(void(F::scale2(F::zero(), F::zero())))>
    : std::true_type {};
template <class F, class = void>
struct HasRcpEstimate : std::false_type {};
template <class F>
struct HasRcpEstimate<F, decltype(void(F::rcp_estimate(F::zero())))> : std::true_type {};

}  // namespace detail

// 1 / d for d >= 1, +Inf or NaN (sigmoid's 1 + exp(-x), erfc's 1 + t). On
// a family with a reciprocal estimate: the estimate and one Newton step, r +
// r (1 - d r), within 0.57 ulp of 1 / d (the estimate's 2^-14 squared, plus
// the last rounding), in four instructions where a division takes the
// divider for 10-16 cycles a vector (vdivps zmm): the division was the
// bottleneck of the GeLU and SiLU loops (tanh GeLU on the Xeon: 37 cycles a
// vector of 16). d = +Inf gives the estimate 0 and 1 - Inf 0 = NaN, which
// max(., -1) turns into -1 (max returns its second operand for a NaN): 0 + 0
// (-1) = 0. A NaN d stays NaN (its estimate is NaN). Elsewhere, the
// division.
template <class F>
HCOPS_VINLINE V<F> recip_ge1(V<F> d) {
  if constexpr (detail::HasRcpEstimate<F>::value) {
    const V<F> r = F::rcp_estimate(d);
    const V<F> t = F::max(F::fnmadd(d, r, F::set1(1.0f)), F::set1(-1.0f));
    return F::fmadd(r, t, r);
  } else {
    return F::div(F::set1(1.0f), d);
  }
}

namespace detail {

// exp(n ln2 + r) = exp(r) 2^n for integral n in [-165, 165] and the reduced
// argument |r| <= ln2/2 (+ rounding).
// exp(r) = 1 + r + r^2 q(r) on the reduced argument: rel. error 3e-9.
constexpr float kExpQ[] = {0.49999994f, 0.16666521f, 0.041668389f, 0.0083687101f, 0.0013814613f};
template <class F>
HCOPS_VINLINE V<F> exp_reduced(V<F> r) {
  return F::add(F::fmadd(F::mul(r, r), poly<F>(r, kExpQ), r), F::set1(1.0f));
}

template <class F>
HCOPS_VINLINE V<F> exp_scale(V<F> n, V<F> r) {
  const V<F> p = exp_reduced<F>(r);
  // Where the family scales by 2^n in one instruction, that: the same
  // value (one rounding, into the denormals or to Inf) as the two factors.
  if constexpr (HasScale2<F>::value) return F::scale2(p, n);
  // 2^n in two factors, each within pow2i's [-126, 127], so that results in
  // the denormal range and overflows to Inf come out right.
  const V<F> n1 = F::round(F::mul(n, F::set1(0.5f)));
  const V<F> n2 = F::sub(n, n1);
  return F::mul(F::mul(p, F::pow2i(n1)), F::pow2i(n2));
}

// x - n ln2, with ln 2 = ln2_hi + ln2_lo and ln2_hi of 15 significant bits:
// n * ln2_hi is exact for |n| < 2^9, even without a fused multiply-add, and
// x - n * ln2_hi exact near x = n ln2.
template <class F>
HCOPS_VINLINE V<F> exp_reduce(V<F> x, V<F> n) {
  return F::fnmadd(n, F::set1(1.428606765330187e-6f), F::fnmadd(n, F::set1(0.693145751953125f), x));
}

constexpr float kLog2e = 1.44269504088896341f;

// round(x * log2(e)) for |x| below 2^20, the exp functions' clamped
// arguments (NaN stays NaN): adding and subtracting 1.5 * 2^23 rounds to
// an integer in the current rounding mode (nearest even, as F::round),
// two multiply-add unit operations where vrndscaleps is two on one port.
// Contracted or not (x * log2e + 1.5 2^23 fused), n is an integer near x /
// ln 2, which is all the reduction needs: r is computed from n exactly.
template <class F>
HCOPS_VINLINE V<F> round_log2e(V<F> x) {
  const V<F> magic = F::set1(12582912.0f);  // 1.5 * 2^23
  return F::sub(rounded(F::fmadd(x, F::set1(kLog2e), magic)), magic);
}

}  // namespace detail

// exp(x). max/min return their second operand when either is NaN: the clamps
// keep a NaN x. Below -104 the result is < 2^-150 (0), above 89 > 2^128
// (Inf).
template <class F>
HCOPS_VINLINE V<F> exp(V<F> x) {
  x = F::min(F::set1(89.0f), F::max(F::set1(-104.0f), x));
  const V<F> n = detail::round_log2e<F>(x);
  return detail::exp_scale<F>(n, detail::exp_reduce<F>(x, n));
}

// exp(hi + lo) for a correction |lo| <= 4 (an error term, or a small
// addend kept out of hi so that hi's rounding does not cost accuracy in the
// result). n = round((hi + lo) / ln 2) is taken from their sum, the reduced
// argument as (hi - n ln2) + lo, so the result's error is that of the
// reduced argument (< 4.5), not of a large |hi|. A NaN lo (the error term of
// an infinite hi: Inf - Inf) is ignored.
template <class F>
HCOPS_VINLINE V<F> exp_hl(V<F> hi, V<F> lo) {
  lo = F::min(F::max(lo, F::set1(-4.0f)), F::set1(4.0f));  // NaN: -4
  // Below -110 + 4 the result is < 2^-152 (0); above 96 - 4, > 2^132 (Inf).
  // Then |n| <= 165.
  hi = F::min(F::set1(96.0f), F::max(F::set1(-110.0f), hi));
  const V<F> n = detail::round_log2e<F>(F::add(hi, lo));
  return detail::exp_scale<F>(n, F::add(detail::exp_reduce<F>(hi, n), lo));
}

namespace detail {

// exp(x) as sigmoid and sigmoid2 use it: only through 1 + exp(x) and
// exp(x) times a factor of at most 1, where a result below 2^-125.5 might
// as well be 0. So x is clamped to [-87.5, 89], n = round(x / ln 2) is in
// [-126, 128], and the result is (2 p) 2^(n - 1) with 2^(n - 1) written
// into the exponent field in one step: for n = -126 that field is all
// zeros, +0, and for n = 128 the product rounds as exp() does (finite up to
// FLT_MAX at x = 88.72, +Inf above). exp(x) is then 0 for x below -86.99
// (as exp() gives it at -Inf, so that the backward passes' 0 * Inf still
// makes PyTorch's NaN at x = +-Inf) and exp()'s value above. Where the
// family scales in one instruction, exp() itself. On AVX2 (Zen 3, one
// core, in L1) tanh GeLU went from 5.5 to 4.4 ns a vector of 8: exp()'s
// two-factor 2^n was 5 of the loop's instructions on the multiply-add
// ports.
template <class F>
HCOPS_VINLINE V<F> exp_for_sigmoid(V<F> x) {
  if constexpr (HasScale2<F>::value) {
    return exp<F>(x);
  } else {
    x = F::min(F::set1(89.0f), F::max(F::set1(-87.5f), x));  // NaN stays NaN
    const V<F> n = round_log2e<F>(x);
    const V<F> p = exp_reduced<F>(exp_reduce<F>(x, n));
    return F::mul(F::add(p, p), F::pow2i(F::sub(n, F::set1(1.0f))));
  }
}

}  // namespace detail

// sigmoid(x) = 1 / (1 + exp(-x)): to full relative accuracy on both sides
// (1 + e is a sum of positive terms); exp(-x) overflowing gives 0.
template <class F>
HCOPS_VINLINE V<F> sigmoid(V<F> x) {
  return recip_ge1<F>(F::add(F::set1(1.0f), detail::exp_for_sigmoid<F>(F::sub(F::zero(), x))));
}

// sigmoid(x) and its complement c = 1 - sigmoid(x) = exp(-x) sigmoid(x),
// both to full relative accuracy (no 1 - s cancellation). Where exp(-x)
// overflows, s = 0 and c = 1 (min turns Inf * 0 = NaN into its second
// operand); for a NaN x, s is NaN and c is 1.
template <class F>
HCOPS_VINLINE void sigmoid2(V<F> x, V<F> &s, V<F> &c) {
  const V<F> e = detail::exp_for_sigmoid<F>(F::sub(F::zero(), x));
  s = recip_ge1<F>(F::add(F::set1(1.0f), e));
  c = F::min(F::mul(e, s), F::set1(1.0f));
}

// tanh: |x| < 0.625: x + x^3 P(x^2) (no cancellation near 0); above,
// 1 - 2 / (exp(2|x|) + 1), which saturates to 1 when exp overflows. The sign
// is put back last, so tanh(-0) = -0.
template <class F>
HCOPS_VINLINE V<F> tanh(V<F> x) {
  static constexpr float P[] = {-0.33333281f, 0.13331442f, -0.053739715f, 0.020639088f, -0.0057049873f};
  const V<F> a = F::abs(x);
  const V<F> a2 = F::mul(a, a);
  const V<F> small = F::fmadd(F::mul(a2, a), poly<F>(a2, P), a);
  const V<F> e = exp<F>(F::add(a, a));
  const V<F> large = F::sub(F::set1(1.0f), F::div(F::set1(2.0f), F::add(e, F::set1(1.0f))));
  return F::copysign(F::select(F::lt(a, F::set1(0.625f)), small, large), x);
}

namespace detail {

constexpr float kErfSplit = 0.921875f;
// erf(z) = z Q(z^2) on |z| < kErfSplit: rel. error 1.6e-8.
constexpr float kErfQ[] = {1.1283791f, -0.37612495f, 0.11281817f, -0.026766624f, 0.0049931891f, -0.00059908925f};
// erfc(t) exp(t^2) (1 + t) = G(w - kErfcMid), w = 1 / (1 + t), on t in
// [0, 10.1] (erfc(10.1) is below the smallest denormal): rel. error 6e-9
// (8e-8 evaluated in f32).
constexpr float kErfcMid = 0.545045018f;
constexpr float kErfcG[] = {0.875795722f,  0.440391928f,  -0.392595798f, -0.0443331227f, 0.33635509f,
                            -0.309767663f, 0.0411245227f, 0.282241374f,  -0.487792164f,  0.364443809f,
                            0.22493501f,   -0.671873331f, 0.349273145f};

// erfc(t) for t >= 0 (or NaN) from t^2 = t2hi + t2lo: exp(-t^2) w G(w),
// accurate in relative terms down to the denormals.
template <class F>
HCOPS_VINLINE V<F> erfc_pos(V<F> t, V<F> t2hi, V<F> t2lo) {
  const V<F> w = recip_ge1<F>(F::add(F::set1(1.0f), t));
  const V<F> g = F::mul(w, poly<F>(F::sub(w, F::set1(kErfcMid)), kErfcG));
  return F::mul(exp_hl<F>(F::sub(F::zero(), t2hi), F::sub(F::zero(), t2lo)), g);
}

}  // namespace detail

// erfc(z) given z and z^2 = z2hi + z2lo (z2lo the product's rounding error,
// or 0): the form the GeLU kernels use, which get z^2 = x^2 / 2 more
// precisely than from the rounded z = x / sqrt(2). Accurate in relative
// terms everywhere: for z >= 0 the tail itself, for z < 0 2 - it (>= 1).
template <class F>
HCOPS_VINLINE V<F> erfc_z2(V<F> z, V<F> z2hi, V<F> z2lo) {
  const V<F> e = detail::erfc_pos<F>(F::abs(z), z2hi, z2lo);
  return F::select(F::lt(z, F::zero()), F::sub(F::set1(2.0f), e), e);
}

template <class F>
HCOPS_VINLINE V<F> erfc(V<F> z) {
  const V<F> z2 = F::mul(z, z);
  return erfc_z2<F>(z, z2, square_error<F>(z, z2));
}

// erf(z): z Q(z^2) near 0 (erf(-0) = -0), 1 - erfc(|z|) with z's sign beyond.
template <class F>
HCOPS_VINLINE V<F> erf(V<F> z) {
  const V<F> t = F::abs(z);
  const V<F> z2 = F::mul(z, z);
  const V<F> near = F::mul(z, poly<F>(z2, detail::kErfQ));
  const V<F> far = F::copysign(F::sub(F::set1(1.0f), detail::erfc_pos<F>(t, z2, square_error<F>(z, z2))), z);
  return F::select(F::lt(t, F::set1(detail::kErfSplit)), near, far);
}

// exp(x) for x <= 0 (softmax's x - max), lean: one range split fewer than
// exp(), for the forward pass where exp is most of the work. Results below
// 2^-126 (x < -87.34) come out as the denormals exp() gives, as PyTorch's
// softmax keeps them (softmax([0, -88]) is [1, 6.05e-39], not [1, 0]): there
// 2^n is applied as 2^max(n, -126) * 2^(n - max(n, -126)), the last product
// rounding once into the denormal range; x < -104 (and -Inf) gives 0; NaN stays NaN; within
// 1 ulp elsewhere (the same reduction and polynomial as exp, in Horner form).
// For x > 0 it is exp(x) up to x = 88, undefined beyond.
template <class F>
inline V<F> exp_nonpositive(V<F> x) {
  x = F::max(F::set1(-110.0f), x);  // max keeps its second operand, a NaN x
  const V<F> n = detail::round_log2e<F>(x);
  V<F> r = F::fnmadd(n, F::set1(0.693145751953125f), x);
  r = F::fnmadd(n, F::set1(1.428606765330187e-6f), r);
  // exp's 1 + r + r^2 q(r), expanded.
  static constexpr float c[] = {1.0f,         1.0f,          0.49999994f,   0.16666521f,
                                0.041668389f, 0.0083687101f, 0.0013814613f};
  const V<F> p = poly<F>(r, c);
  // One rounding into the denormals with scale2; the two factors below
  // round p 2^-126 first where it is itself subnormal (p < 1), so the
  // families without scale2 may give a denormal result one ulp apart.
  if constexpr (detail::HasScale2<F>::value) return F::scale2(p, n);
  const V<F> n1 = F::max(n, F::set1(-126.0f));  // 2^n1 normal; 2^(n - n1) = 1 but below 2^-126
  return F::mul(F::mul(p, F::pow2i(n1)), F::pow2i(F::sub(n, n1)));
}

}  // namespace hcops::ops::vmath
