// Vector traits of the generic family in GCC vector extensions: 16-byte
// vectors (SSE2, every x86-64), the same interface as the intrinsics
// families' vec.h (V, Mask, lanes, zero, load, loadu, storeu, set1, fmadd,
// mul, mask), so code written against traits runs on any CPU. A Mask is a
// row count: partial vectors are element loops, slow but rare.
#pragma once

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
  static V set1(T x) { return V{} + x; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
};

using F32 = Vec<float>;
using F64 = Vec<double>;

}  // namespace hcops::kernels::generic
