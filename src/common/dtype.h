// The datatypes the engines compute with, as values (for tables, verbose
// lines, hcops-info) and as C++ types.
#pragma once

#include <cstdint>

namespace hcops {

enum class Dtype : uint8_t { f32, f64, bf16 };

// bfloat16 as stored: the high half of an IEEE binary32.
struct bf16 {
  uint16_t bits;
};

template <typename T>
struct DtypeOf;
template <>
struct DtypeOf<float> {
  static constexpr Dtype value = Dtype::f32;
};
template <>
struct DtypeOf<double> {
  static constexpr Dtype value = Dtype::f64;
};
template <>
struct DtypeOf<bf16> {
  static constexpr Dtype value = Dtype::bf16;
};

inline const char *dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32: return "f32";
    case Dtype::f64: return "f64";
    case Dtype::bf16: return "bf16";
  }
  return "?";
}

}  // namespace hcops
