// What the engine's accuracy tests share: each datatype combination's name
// for their messages, the unit roundoff, and conversions of the element
// types to and from double.
#pragma once

#include <limits>

#include "common/dtype.h"
#include "kernels/gemm_types.h"

namespace engine_test {

constexpr double kU = 0x1p-24;  // f32's unit roundoff
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename Ty>
struct Combo;
template <>
struct Combo<hcops::Sgemm> {
  static constexpr const char *name = "Sgemm";
};
template <>
struct Combo<hcops::Dgemm> {
  static constexpr const char *name = "Dgemm";
};
template <>
struct Combo<hcops::Bf16Gemm> {
  static constexpr const char *name = "Bf16Gemm (bf16 A,B -> f32 C)";
};
template <>
struct Combo<hcops::Bf16Bf16Gemm> {
  static constexpr const char *name = "Bf16Bf16Gemm (bf16 A,B -> bf16 C)";
};
template <>
struct Combo<hcops::SgemmBf16> {
  static constexpr const char *name = "SgemmBf16 (f32, inputs rounded to bf16)";
};
template <>
struct Combo<hcops::SgemmBf16x3> {
  static constexpr const char *name = "SgemmBf16x3 (f32, inputs split in two bf16)";
};

inline double as_double(float x) { return x; }
inline double as_double(hcops::bf16 x) { return float(x); }
template <typename T>
T from_double(double x) {
  return T(float(x));
}

}  // namespace engine_test
