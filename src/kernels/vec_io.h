// Vectors of a family's traits W loaded from and stored to values of type E:
// W's own element type as they are, or bf16 widened exactly on load and
// rounded to nearest even on store (W::load_bf16, W::store_bf16). Shared by
// the kernels that read their operands in place (skinny.h, shallow.h,
// avx512_bf16/shallow_bf16.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/dtype.h"

namespace hcops::kernels::vec_io {
// In an anonymous namespace, as pack.h: included by families built with
// different -m flags, each of which must keep its own copy.
namespace {

template <typename W, typename E>
inline auto load_v(const E *p) {
  if constexpr (std::is_same_v<E, bf16>) return W::load_bf16(reinterpret_cast<const uint16_t *>(p));
  else return W::loadu(p);
}
template <typename W, typename E>
inline auto load_v(const E *p, typename W::Mask m) {
  if constexpr (std::is_same_v<E, bf16>) return W::load_bf16(reinterpret_cast<const uint16_t *>(p), m);
  else return W::loadu(p, m);
}
template <typename W, typename E, typename V>
inline void store_v(E *p, V v) {
  if constexpr (std::is_same_v<E, bf16>) W::store_bf16(reinterpret_cast<uint16_t *>(p), v);
  else W::storeu(p, v);
}
template <typename W, typename E, typename V>
inline void store_v(E *p, V v, typename W::Mask m) {
  if constexpr (std::is_same_v<E, bf16>) W::store_bf16(reinterpret_cast<uint16_t *>(p), v, m);
  else W::storeu(p, v, m);
}
}  // namespace
}  // namespace hcops::kernels::vec_io
