// The datatypes the engines compute with, as values (for tables, verbose
// lines, hcops-info) and as C++ types.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/api.h"

namespace hcops {

enum class Dtype : uint8_t { f32, f64, bf16 };

// bfloat16 as stored: the high half of an IEEE binary32. From float it
// rounds to nearest even (NaN stays NaN, quietened); to float it is exact.
struct HCOPS_API bf16 {  // default: a template argument of exported gemm<Ty>
  uint16_t bits;

  bf16() = default;
  explicit bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) bits = static_cast<uint16_t>((u >> 16) | 0x40u);
    else bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  explicit operator float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
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
