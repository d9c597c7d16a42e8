// The tile operations on the hardware: AMX-TILE and AMX-BF16 intrinsics.
// Compiled with -mamx-tile -mamx-bf16 (kernels/amx/family.am); executed only
// when cpu_features() says the CPU, XCR0 and Linux's permission
// (arch_prctl(ARCH_REQ_XCOMP_PERM)) all allow it, else the first tile
// instruction would fault. tiles_emulated.h is the same interface in
// software, which the tests run on any CPU.
#pragma once

#include <immintrin.h>

#include "kernels/amx/tile_config.h"

namespace hcops::kernels::amx {

// GCC's tile intrinsics paste their tile argument into the instruction's
// text (%tmm<N>): it must be a literal, so each template picks its literal.
#define HCOPS_TILE_LITERALS(STMT)     \
  if constexpr (T == 0) STMT(0);      \
  else if constexpr (T == 1) STMT(1); \
  else if constexpr (T == 2) STMT(2); \
  else if constexpr (T == 3) STMT(3); \
  else if constexpr (T == 4) STMT(4); \
  else if constexpr (T == 5) STMT(5); \
  else if constexpr (T == 6) STMT(6); \
  else STMT(7)

// GCC 12's ldtilecfg asm declares a read of 8 bytes of the configuration,
// and its tileloadd none at all: a compiler barrier before each keeps every
// store the code made to the memory they read ahead of them.
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

struct HwTiles {
  static void configure(const TileConfig &cfg) {
    memory_barrier();
    _tile_loadconfig(&cfg);
  }
  static void release() { _tile_release(); }
  // Tile numbers are immediates in the instructions, hence template arguments.
  template <int T>
  static void zero() {
    static_assert(T >= 0 && T < kTiles, "palette 1 has tiles 0-7");
#define HCOPS_TILE_ZERO(N) _tile_zero(N)
    HCOPS_TILE_LITERALS(HCOPS_TILE_ZERO);
#undef HCOPS_TILE_ZERO
  }
  // Once: with TILELOADDT1's hint that the data will not be reused soon (it
  // need not stay in L1), for a tile whose rows the next blocks do not read
  // again from L1, so that it does not evict those they do.
  template <int T, bool Once = false>
  static void load(const void *base, long stride_bytes) {
    static_assert(T >= 0 && T < kTiles, "palette 1 has tiles 0-7");
#define HCOPS_TILE_LOAD(N) _tile_loadd(N, base, stride_bytes)
#define HCOPS_TILE_LOAD_ONCE(N) _tile_stream_loadd(N, base, stride_bytes)
    memory_barrier();
    if constexpr (Once) {
      HCOPS_TILE_LITERALS(HCOPS_TILE_LOAD_ONCE);
    } else {
      HCOPS_TILE_LITERALS(HCOPS_TILE_LOAD);
    }
#undef HCOPS_TILE_LOAD
#undef HCOPS_TILE_LOAD_ONCE
  }
  template <int T>
  static void load_once(const void *base, long stride_bytes) {
    load<T, true>(base, stride_bytes);
  }
  template <int T>
  static void store(void *base, long stride_bytes) {
    static_assert(T >= 0 && T < kTiles, "palette 1 has tiles 0-7");
#define HCOPS_TILE_STORE(N) _tile_stored(N, base, stride_bytes)
    HCOPS_TILE_LITERALS(HCOPS_TILE_STORE);
#undef HCOPS_TILE_STORE
  }
  // Tile D (f32) += tile S1 (bf16 pairs) . tile S2 (bf16 pairs, VNNI
  // layout). Only the combinations the family uses are spelt out:
  // gemm_family.h's 2 x 2 result tiles 0-3 from B tiles 4, 5 and A tiles 6,
  // 7; skinny_tiles.h's result tiles 0-3 from A tiles 5, 6 and B tile 4;
  // ops/attention_tiles.h's result tiles 0-3 from A tile 6 and B tiles 4, 5.
  template <int D, int S1, int S2>
  static void dpbf16ps() {
    constexpr int which = D * 100 + S1 * 10 + S2;
    static_assert(which == 46 || which == 147 || which == 256 || which == 357 || which == 54 || which == 164 ||
                      which == 254 || which == 364 || which == 64 || which == 165 || which == 264 ||
                      which == 365,
                  "a tile triple not spelt out here");
    if constexpr (which == 46) _tile_dpbf16ps(0, 4, 6);
    else if constexpr (which == 147) _tile_dpbf16ps(1, 4, 7);
    else if constexpr (which == 256) _tile_dpbf16ps(2, 5, 6);
    else if constexpr (which == 357) _tile_dpbf16ps(3, 5, 7);
    else if constexpr (which == 54) _tile_dpbf16ps(0, 5, 4);
    else if constexpr (which == 164) _tile_dpbf16ps(1, 6, 4);
    else if constexpr (which == 254) _tile_dpbf16ps(2, 5, 4);
    else if constexpr (which == 364) _tile_dpbf16ps(3, 6, 4);
    else if constexpr (which == 64) _tile_dpbf16ps(0, 6, 4);
    else if constexpr (which == 165) _tile_dpbf16ps(1, 6, 5);
    else if constexpr (which == 264) _tile_dpbf16ps(2, 6, 4);
    else _tile_dpbf16ps(3, 6, 5);
  }
};
#undef HCOPS_TILE_LITERALS

}  // namespace hcops::kernels::amx
