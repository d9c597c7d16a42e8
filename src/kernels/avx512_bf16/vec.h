// Vector traits for the families with AVX512_BF16 (avx512_bf16, amx): the
// avx512 family's F32 (kernels/avx512/vec.h) with bf16 stores by
// vcvtneps2bf16 (convert.h: bit for bit as dtype.h's rounding, denormals
// included), a third of the instructions of F32's integer rounding. For the
// kernels written once over vector traits (shallow.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/vec.h"
#include "kernels/avx512_bf16/convert.h"

namespace hcops::kernels::avx512_bf16 {
namespace {  // each family's own copy (convert.h's functions are its own too)

// (convert.h's to_bf16 named in full: inside the struct, the unqualified name
// is avx512::F32's own integer rounding.)
struct F32 : avx512::F32 {
  static __m256i rounded(V v) { return avx512_bf16::to_bf16(v); }
  static void store_bf16(uint16_t *p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), rounded(v)); }
  static void store_bf16(uint16_t *p, V v, Mask m) { _mm256_mask_storeu_epi16(p, m, rounded(v)); }
  static void stream_bf16(uint16_t *p, V lo, V hi) {  // 32 values: lo's 16, then hi's
    _mm512_stream_si512(reinterpret_cast<__m512i *>(p), avx512_bf16::to_bf16(lo, hi));
  }
};

}  // namespace
}  // namespace hcops::kernels::avx512_bf16
