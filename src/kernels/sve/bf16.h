// bf16 data in SVE f32 lanes, vector-length agnostic: what the sve_bf16
// family's C and the sve operators' bf16 tensors load and store (the
// operators' fixed-length vectors convert to these types implicitly).
#pragma once

#include <arm_sve.h>

#include <cstdint>

namespace hcops::kernels::sve {
// Internal linkage: each translation unit keeps its copy, compiled with its
// flags (the operators' -msve-vector-bits lets GCC assume a length).
namespace {

// Each halfword of x (lanes of p) into the high half of its 32-bit lane;
// zero in the other lanes (nothing is read there).
inline svfloat32_t load_bf16(svbool_t p, const uint16_t *x) {
  return svreinterpret_f32_u32(svlsl_n_u32_x(svptrue_b32(), svld1uh_u32(p, x), 16));
}

// v rounded to nearest even, bit for bit bf16(float) (common/dtype.h): a
// NaN keeps its sign and high payload, made quiet.
inline void store_bf16(svbool_t p, uint16_t *x, svfloat32_t v) {
  const svuint32_t u = svreinterpret_u32_f32(v);
  const svuint32_t odd = svand_n_u32_x(p, svlsr_n_u32_x(p, u, 16), 1);
  const svuint32_t rounded = svlsr_n_u32_x(p, svadd_u32_x(p, svadd_n_u32_x(p, u, 0x7fff), odd), 16);
  const svuint32_t quiet = svorr_n_u32_x(p, svlsr_n_u32_x(p, u, 16), 0x40);
  svst1h_u32(p, x, svsel_u32(svcmpuo_f32(p, v, v), quiet, rounded));
}

}  // namespace
}  // namespace hcops::kernels::sve
