// Vector math shared by the operators, written once against a kernel
// family's f32 vector traits (kernels/<family>/vec.h, `F`): exp, tanh, erf,
// erfc and sigmoid over whole vectors, branch-free (both sides of a range
// split are computed and selected), f32 arithmetic throughout.
//
// Accuracy (measured against libm's double functions on every 7th float of
// the ranges): exp 1.01 ulp (results within 1 ulp of FLT_MAX may round to
// +Inf), tanh 1.3 ulp, erf 2.5 ulp, sigmoid 2.9 ulp, erfc 1.7 ulp where
// erfc(z) > 2e-10 (z < 4.5; beyond, only absolutely: < 2e-10). IEEE special
// values: exp(+Inf) = +Inf, exp(-Inf) = 0, overflow gives +Inf, underflow 0
// or a denormal, tanh and erf saturate to +-1, odd functions keep -0; NaN
// propagates through every function.
//
// The polynomial coefficients are minimax-like fits (iteratively reweighted
// least squares at Chebyshev nodes) made for this file, rounded to f32.
// Where a family has no fused multiply-add (generic: fmadd is a*b + c), the
// error terms that need a fused product (z^2's via fmsub) are zero, so the
// erfc tails lose a few ulp more there.
#pragma once

namespace hcops::ops::vmath {

template <class F>
using V = typename F::V;

// Horner evaluation of c[0] + c[1] x + ... + c[N-1] x^(N-1).
template <class F, int N>
inline V<F> poly(V<F> x, const float (&c)[N]) {
  V<F> r = F::set1(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) r = F::fmadd(r, x, F::set1(c[i]));
  return r;
}

// exp(hi + lo) for a correction |lo| <= 4 (an error term, or a small
// addend kept out of hi so that hi's rounding does not cost accuracy in the
// result). n = round((hi + lo) / ln 2) is taken from their sum, the reduced
// argument as (hi - n ln2) + lo, so the result's error is that of the
// reduced argument (< 4.5), not of a large |hi|. A NaN lo (the error term of an
// infinite hi: Inf - Inf) is ignored.
template <class F>
inline V<F> exp_hl(V<F> hi, V<F> lo) {
  // max/min return their second operand when either is NaN: a NaN hi stays
  // NaN; a NaN lo becomes -4.
  lo = F::min(F::max(lo, F::set1(-4.0f)), F::set1(4.0f));
  // Below -110 + 4 the result is < 2^-152 (0); above 96 - 4, > 2^132 (Inf).
  // Then |n| <= 165: n * ln2_hi below is exact and n's halves fit pow2i.
  hi = F::min(F::set1(96.0f), F::max(F::set1(-110.0f), hi));
  const V<F> n = F::round(F::mul(F::add(hi, lo), F::set1(1.44269504088896341f)));
  // ln 2 = ln2_hi + ln2_lo with ln2_hi of 15 significant bits: n * ln2_hi is
  // exact for |n| < 2^9, even without a fused multiply-add.
  V<F> r = F::fnmadd(n, F::set1(0.693145751953125f), hi);
  r = F::fnmadd(n, F::set1(1.428606765330187e-6f), r);
  r = F::add(r, lo);
  // exp(r) = 1 + r + r^2 q(r) on |r| <= ln2/2 (+ rounding): rel. error 3e-9.
  static constexpr float q[] = {0.49999994f, 0.16666521f, 0.041668389f, 0.0083687101f, 0.0013814613f};
  const V<F> p = F::add(F::fmadd(F::mul(r, r), poly<F>(r, q), r), F::set1(1.0f));
  // 2^n in two factors, each within pow2i's [-126, 127], so that results in
  // the denormal range and n = 128 (overflow to Inf) come out right.
  const V<F> n1 = F::round(F::mul(n, F::set1(0.5f)));
  const V<F> n2 = F::sub(n, n1);
  return F::mul(F::mul(p, F::pow2i(n1)), F::pow2i(n2));
}

template <class F>
inline V<F> exp(V<F> x) {
  return exp_hl<F>(x, F::zero());
}

// sigmoid(x) = 1 / (1 + exp(-x)) and its complement 1 - sigmoid(x), both
// to full relative accuracy (no 1 - s cancellation): with e = exp(-|x|) <= 1
// and r = 1 / (1 + e), one of them is r and the other e * r. exp never
// overflows here. sigmoid(+Inf) = 1, sigmoid(-Inf) = 0, NaN stays NaN.
template <class F>
inline void sigmoid2(V<F> x, V<F> &s, V<F> &c) {
  const V<F> e = exp<F>(F::sub(F::zero(), F::abs(x)));
  const V<F> r = F::div(F::set1(1.0f), F::add(F::set1(1.0f), e));
  const V<F> er = F::mul(e, r);
  const auto neg = F::lt(x, F::zero());
  s = F::select(neg, er, r);
  c = F::select(neg, r, er);
}

template <class F>
inline V<F> sigmoid(V<F> x) {
  V<F> s, c;
  sigmoid2<F>(x, s, c);
  return s;
}

// tanh: |x| < 0.625: x + x^3 P(x^2) (no cancellation near 0); above,
// 1 - 2 / (exp(2|x|) + 1), which saturates to 1 when exp overflows. The sign
// is put back last, so tanh(-0) = -0.
template <class F>
inline V<F> tanh(V<F> x) {
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
// log(erfc(t)) + t^2 = R(t - 2.5) on [kErfSplit, 4.5]: abs. error 1.5e-8
// (1.7e-7 evaluated in f32). Beyond 4.5, erfc < 2e-10 and R(4.5) is used.
constexpr float kErfcR[] = {-1.55681527f,     -0.352680773f,   0.0561065003f,    -0.0108579714f,  0.00216485769f,
                            -0.000420978555f, 7.76011075e-05f, -1.28418224e-05f, 1.56964643e-06f, -8.71954526e-08f};

// erfc(|z|) for |z| >= kErfSplit from z^2 = z2hi + z2lo: exp(-z^2 + R).
template <class F>
inline V<F> erfc_tail(V<F> t, V<F> z2hi, V<F> z2lo) {
  const V<F> tr = F::sub(F::min(t, F::set1(4.5f)), F::set1(2.5f));
  return exp_hl<F>(F::sub(F::zero(), z2hi), F::sub(poly<F>(tr, kErfcR), z2lo));
}

}  // namespace detail

// erfc(z) given z and z^2 = z2hi + z2lo (z2lo the product's rounding error,
// or 0): the form the GeLU kernels use, which get z^2 = x^2 / 2 more
// precisely than from the rounded z = x / sqrt(2). Accurate in relative
// terms on both tails: for z > 0 the tail exp(-z^2 + R) itself, for z < 0
// 2 - it.
template <class F>
inline V<F> erfc_z2(V<F> z, V<F> z2hi, V<F> z2lo) {
  const V<F> t = F::abs(z);
  const V<F> near = F::fnmadd(z, poly<F>(z2hi, detail::kErfQ), F::set1(1.0f));
  const V<F> e = detail::erfc_tail<F>(t, z2hi, z2lo);
  const V<F> far = F::select(F::lt(z, F::zero()), F::sub(F::set1(2.0f), e), e);
  return F::select(F::lt(t, F::set1(detail::kErfSplit)), near, far);
}

template <class F>
inline V<F> erfc(V<F> z) {
  const V<F> z2 = F::mul(z, z);
  return erfc_z2<F>(z, z2, F::fmsub(z, z, z2));
}

// erf(z): z Q(z^2) near 0 (erf(-0) = -0), 1 - erfc(|z|) with z's sign beyond.
template <class F>
inline V<F> erf(V<F> z) {
  const V<F> t = F::abs(z);
  const V<F> z2 = F::mul(z, z);
  const V<F> near = F::mul(z, poly<F>(z2, detail::kErfQ));
  const V<F> far = F::copysign(F::sub(F::set1(1.0f), detail::erfc_tail<F>(t, z2, F::fmsub(z, z, z2))), z);
  return F::select(F::lt(t, F::set1(detail::kErfSplit)), near, far);
}

}  // namespace hcops::ops::vmath
