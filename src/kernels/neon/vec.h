// Vector traits of the neon family (AArch64 Advanced SIMD, in every AArch64
// CPU), for f32 and f64: the GEMM part of the interface simd_tile.h's
// microkernel is written against (V, Mask, lanes, zero, load, loadu,
// storeu, set1, fmadd, mul). NEON has no masked loads or stores: a partial
// tile's rows go through a small buffer, on edge tiles only.
#pragma once

#include <arm_neon.h>

#include <cstring>

namespace hcops::kernels::neon {

struct F32 {
  using V = float32x4_t;
  using Mask = int;  // rows [0, Mask)
  static constexpr int lanes = 4;
  static Mask mask(int rows) { return rows; }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V load(const float *p) { return vld1q_f32(p); }
  static V loadu(const float *p) { return vld1q_f32(p); }
  static V loadu(const float *p, Mask m) {
    float t[lanes] = {};
    std::memcpy(t, p, sizeof(float) * m);
    return vld1q_f32(t);
  }
  static void storeu(float *p, V v) { vst1q_f32(p, v); }
  static void storeu(float *p, V v, Mask m) {
    float t[lanes];
    vst1q_f32(t, v);
    std::memcpy(p, t, sizeof(float) * m);
  }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // a*b + c, rounded once
  static V mul(V a, V b) { return vmulq_f32(a, b); }
};

struct F64 {
  using V = float64x2_t;
  using Mask = int;
  static constexpr int lanes = 2;
  static Mask mask(int rows) { return rows; }
  static V zero() { return vdupq_n_f64(0.0); }
  static V load(const double *p) { return vld1q_f64(p); }
  static V loadu(const double *p) { return vld1q_f64(p); }
  static V loadu(const double *p, Mask m) {
    double t[lanes] = {};
    std::memcpy(t, p, sizeof(double) * m);
    return vld1q_f64(t);
  }
  static void storeu(double *p, V v) { vst1q_f64(p, v); }
  static void storeu(double *p, V v, Mask m) {
    double t[lanes];
    vst1q_f64(t, v);
    std::memcpy(p, t, sizeof(double) * m);
  }
  static V set1(double x) { return vdupq_n_f64(x); }
  static V fmadd(V a, V b, V c) { return vfmaq_f64(c, a, b); }
  static V mul(V a, V b) { return vmulq_f64(a, b); }
};

}  // namespace hcops::kernels::neon
