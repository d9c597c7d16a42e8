// Vector traits of the generic family in GCC vector extensions: 16-byte
// vectors (SSE2, every x86-64), the same interface as the intrinsics
// families' vec.h (V, Mask, lanes, zero, load, loadu, storeu, set1, fmadd,
// mul, mask), so code written against traits runs on any CPU. A Mask is a
// row count: partial vectors are element loops, slow but rare.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/dtype.h"

namespace hcops::kernels::generic {

constexpr int kVectorBytes = 16;

template <typename T>
struct Vec {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  typedef T U __attribute__((vector_size(kVectorBytes), aligned(alignof(T))));  // unaligned access
  using Mask = int;
  static constexpr int lanes = kVectorBytes / sizeof(T);
  static Mask mask(int rows) { return rows; }
  static V zero() { return V{}; }
  static V load(const T *p) { return *reinterpret_cast<const V *>(p); }
  static V loadu(const T *p) { return *reinterpret_cast<const U *>(p); }
  static V loadu(const T *p, Mask m) {
    V v{};
    for (int i = 0; i < m; ++i) v[i] = p[i];
    return v;
  }
  static void storeu(T *p, V v) { *reinterpret_cast<U *>(p) = v; }
  static void storeu(T *p, V v, Mask m) {
    for (int i = 0; i < m; ++i) p[i] = v[i];
  }
  static V set1(T x) {  // not V{} + x: that turns -0.0 into +0.0
    V v;
    for (int i = 0; i < lanes; ++i) v[i] = x;
    return v;
  }
  // a * b + c, fused where the baseline ISA has FMA (AArch64: one FMLA,
  // GCC vectorizes the lanes' fma), two roundings on SSE2, the same in
  // every kernel and operator. The family is built with -ffp-contract=off
  // (kernels/generic/family.am, ops/ops.am), so only what is written as
  // fmadd or fma is fused: left to the compiler, a * b + c was fused in some
  // instantiations of an expression and not in others, and C's update of
  // a full tile rounded differently from an edge tile's on AArch64.
  static V fmadd(V a, V b, V c) {
#if defined(__FP_FAST_FMA) && defined(__FP_FAST_FMAF)
    return fma(a, b, c);
#else
    return a * b + c;
#endif
  }
  // a * b + c rounded once (IEEE fma), for results that must equal an FMA
  // machine's bit for bit (ops/adam_impl.h); libm's fma per lane where the
  // ISA has none, slow. fmaf for f32: fma on floats widened to double
  // rounds twice (to double, then to float) and can miss by an ulp.
  static V fma(V a, V b, V c) {
    for (int i = 0; i < lanes; ++i) {
      if constexpr (sizeof(T) == 4) a[i] = __builtin_fmaf(a[i], b[i], c[i]);
      else a[i] = __builtin_fma(a[i], b[i], c[i]);
    }
    return a;
  }
  static V mul(V a, V b) { return a * b; }

  // For the operators (ops/), f32 only where noted: arithmetic, comparisons,
  // reductions, and bf16 data (uint16_t bits, the high half of a float)
  // widened on load and rounded to nearest even on store.
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef Bits Cmp __attribute__((vector_size(kVectorBytes)));  // all ones where true
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V div(V a, V b) { return a / b; }
  static V fnmadd(V a, V b, V c) { return c - a * b; }
  static V fmsub(V a, V b, V c) { return a * b - c; }
  // As maxps/minps: b when either is NaN.
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V abs(V a) { return (V)((Cmp)a & ~(Cmp)set1(T(-0.0))); }
  static V sqrt(V a) {
    for (int i = 0; i < lanes; ++i) a[i] = __builtin_sqrt(a[i]);
    return a;
  }
  static V round(V a) {  // to nearest even, as cvtps2dq in the default rounding mode
    for (int i = 0; i < lanes; ++i) a[i] = __builtin_nearbyint(a[i]);
    return a;
  }
  // 2^n for integral n in [-126, 127], exactly (f32); +0 for n = -127 (the
  // exponent field all zeros), which ops/vmath.h's exp_for_sigmoid takes.
  static V pow2i(V n) {
    static_assert(sizeof(T) == 4, "f32 only");
    Cmp e;
    for (int i = 0; i < lanes; ++i) e[i] = static_cast<Bits>(n[i]) + 127;
    return (V)(e << 23);
  }
  static V copysign(V mag, V sgn) {
    const Cmp s = (Cmp)set1(T(-0.0));
    return (V)(((Cmp)mag & ~s) | ((Cmp)sgn & s));
  }
  static Cmp lt(V a, V b) { return a < b; }
  static Cmp gt(V a, V b) { return a > b; }
  static Cmp isnan(V a) { return a != a; }
  static V select(Cmp m, V a, V b) { return m ? a : b; }
  static T reduce_add(V a) {
    T s = a[0];
    for (int i = 1; i < lanes; ++i) s += a[i];
    return s;
  }
  static T reduce_max(V a) {
    T s = a[0];
    for (int i = 1; i < lanes; ++i) s = a[i] > s ? a[i] : s;
    return s;
  }
  static V load_bf16(const uint16_t *p) { return load_bf16(p, lanes); }
  static V load_bf16(const uint16_t *p, Mask m) {
    static_assert(sizeof(T) == 4, "f32 only");
    Cmp u{};
    for (int i = 0; i < m; ++i) u[i] = static_cast<Bits>(static_cast<uint32_t>(p[i]) << 16);
    return (V)u;
  }
  static void store_bf16(uint16_t *p, V v) { store_bf16(p, v, lanes); }
  static void store_bf16(uint16_t *p, V v, Mask m) {
    static_assert(sizeof(T) == 4, "f32 only");
    for (int i = 0; i < m; ++i) p[i] = hcops::bf16(v[i]).bits;
  }
};

using F32 = Vec<float>;
using F64 = Vec<double>;

}  // namespace hcops::kernels::generic
