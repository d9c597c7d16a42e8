// f32 vector traits of the sve family for the operators (ops/), the
// interface kernels/avx512/vec.h documents. The operator code holds vectors
// in structs and arrays and takes its lane count as a constant, which SVE's
// sizeless vector types do not allow; so the operators are built once per
// vector length (ops/ops.am: -msve-vector-bits=128 ... 2048), on these
// fixed-length SVE types, and ops/family.cpp takes the table built for the
// length this CPU runs (Linux's prctl(PR_SVE_GET_VL)). The family's GEMM
// kernels (family.cpp) stay vector-length agnostic: one build for all.
//
// Semantics as the other families': max/min return b where either is NaN
// (maxps), comparisons are ordered, bf16 is widened on load and rounded to
// nearest even on store (NaN made quiet), fmadd and fma round once.
#pragma once

#include <arm_sve.h>

#include <cstdint>

#include "kernels/sve/bf16.h"

#if !defined(__ARM_FEATURE_SVE_BITS) || __ARM_FEATURE_SVE_BITS == 0
#error "kernels/sve/vec.h: build with -msve-vector-bits=<bits> (ops/ops.am), for fixed-length vectors"
#endif

namespace hcops::kernels::sve {
// Internal linkage: the five builds' F32 differ in length under one name,
// and the operator templates instantiated on them must not be merged by the
// linker (as inline functions of one name would be).
namespace {

namespace fixed {
constexpr int kBits = __ARM_FEATURE_SVE_BITS;
typedef svfloat32_t f32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
typedef svuint32_t u32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
typedef svbool_t pred __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
}  // namespace fixed

struct F32 {
  using V = fixed::f32;
  using Mask = fixed::pred;  // the first rows lanes
  using Cmp = fixed::pred;
  static constexpr int lanes = fixed::kBits / 32;
  static svbool_t all() { return svptrue_b32(); }
  static Mask mask(int rows) { return svwhilelt_b32_s32(0, rows); }
  static V zero() { return svdup_n_f32(0.0f); }
  static V load(const float *p) { return svld1_f32(all(), p); }
  static V loadu(const float *p) { return svld1_f32(all(), p); }
  static V loadu(const float *p, Mask m) { return svld1_f32(m, p); }  // zero past the mask, nothing read there
  static void storeu(float *p, V v) { svst1_f32(all(), p, v); }
  static void storeu(float *p, V v, Mask m) { svst1_f32(m, p, v); }
  static V set1(float x) { return svdup_n_f32(x); }
  static V fmadd(V a, V b, V c) { return svmla_f32_x(all(), c, a, b); }  // a*b + c, rounded once
  static V fma(V a, V b, V c) { return fmadd(a, b, c); }
  static V mul(V a, V b) { return svmul_f32_x(all(), a, b); }
  static V add(V a, V b) { return svadd_f32_x(all(), a, b); }
  static V sub(V a, V b) { return svsub_f32_x(all(), a, b); }
  static V div(V a, V b) { return svdiv_f32_x(all(), a, b); }
  static V fnmadd(V a, V b, V c) { return svmls_f32_x(all(), c, a, b); }   // c - a*b
  static V fmsub(V a, V b, V c) { return svnmls_f32_x(all(), c, a, b); }  // a*b - c
  // Not FMAX/FMIN, which return NaN: the operators count on maxps's b.
  static V max(V a, V b) { return svsel_f32(svcmpgt_f32(all(), a, b), a, b); }
  static V min(V a, V b) { return svsel_f32(svcmplt_f32(all(), a, b), a, b); }
  static V abs(V a) { return svabs_f32_x(all(), a); }
  static V sqrt(V a) { return svsqrt_f32_x(all(), a); }
  static V round(V a) { return svrintn_f32_x(all(), a); }  // to nearest even, no inexact flag
  // 2^n for integral n in [-126, 127], exactly; +0 for n = -127 (the
  // exponent field all zeros), which ops/vmath.h's exp_for_sigmoid takes.
  static V pow2i(V n) {
    const svint32_t e = svadd_n_s32_x(all(), svcvt_s32_f32_x(all(), n), 127);
    return svreinterpret_f32_s32(svlsl_n_s32_x(all(), e, 23));
  }
  static V copysign(V mag, V sgn) {
    const svuint32_t sign = svdup_n_u32(0x80000000u);
    const svuint32_t m = svbic_u32_x(all(), svreinterpret_u32_f32(mag), sign);
    return svreinterpret_f32_u32(svorr_u32_x(all(), m, svand_u32_x(all(), svreinterpret_u32_f32(sgn), sign)));
  }
  static Cmp lt(V a, V b) { return svcmplt_f32(all(), a, b); }
  static Cmp gt(V a, V b) { return svcmpgt_f32(all(), a, b); }
  static Cmp isnan(V a) { return svcmpuo_f32(all(), a, a); }
  static V select(Cmp m, V a, V b) { return svsel_f32(m, a, b); }  // m ? a : b
  static float reduce_add(V a) { return svaddv_f32(all(), a); }
  static float reduce_max(V a) { return svmaxv_f32(all(), a); }
  static V load_bf16(const uint16_t *p) { return sve::load_bf16(all(), p); }
  static V load_bf16(const uint16_t *p, Mask m) { return sve::load_bf16(m, p); }
  static void store_bf16(uint16_t *p, V v) { sve::store_bf16(all(), p, v); }
  static void store_bf16(uint16_t *p, V v, Mask m) { sve::store_bf16(m, p, v); }
};

}  // namespace
}  // namespace hcops::kernels::sve
