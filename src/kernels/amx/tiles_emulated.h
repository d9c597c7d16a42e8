// The tile operations of tiles_hw.h in software, as the Intel SDM (vol. 2:
// LDTILECFG, TILELOADD, TILESTORED, TILEZERO, TDPBF16PS, TILERELEASE)
// defines them, so the AMX family's packing, tile configuration and
// epilogues run and are tested on CPUs without AMX: the family's code is one
// template instantiated on either (kernels/amx/gemm_family.h).
//
// Faithful where the family could go wrong: the configuration (palette 1, a
// tile's rows and bytes per row), strides in bytes, loads that zero what
// lies past a tile's rows and columns, the operand shapes TDPBF16PS
// requires, and its arithmetic: dst[m][n] (f32) += sum over the pairs k of
// src1[m][2k+e] * src2[k][2n+e] (bf16, e = 0, 1), inputs denormal-as-zero,
// results flushed to zero, round to nearest even. Whatever the hardware
// would fault on (#UD, #GP) aborts with the reason. Slow: tests only.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/amx/tile_config.h"

namespace hcops::kernels::amx {

struct EmulatedTileState {
  bool configured = false;
  TileConfig cfg{};
  alignas(64) uint8_t data[kTiles][kMaxRows * kMaxColsBytes];
};
// Tile state is per thread, as the registers are.
inline thread_local EmulatedTileState emulated_tiles;
// TDPBF16PS executed by all threads, so a test knows the tiles did the work.
inline std::atomic<long> emulated_dpbf16ps_count{0};

struct EmulatedTiles {
  [[noreturn]] static void fault(const char *what, int tile, const char *insn = "") {
    std::fprintf(stderr, "hcops: AMX emulation: the hardware would fault: %s%s%s (tile %d)\n", insn, *insn ? ": " : "",
                 what, tile);
    std::abort();
  }

  static void configure(const TileConfig &cfg) {
    EmulatedTileState &s = emulated_tiles;
    if (cfg.palette_id == 0) {  // palette 0 is the init state: as TILERELEASE
      release();
      return;
    }
    if (cfg.palette_id != kPalette) fault("LDTILECFG: unsupported palette", -1);
    for (uint8_t r : cfg.reserved)
      if (r) fault("LDTILECFG: reserved bytes not zero", -1);
    if (cfg.start_row) fault("LDTILECFG: start_row not zero (nothing to restart)", -1);
    for (int t = 0; t < 16; ++t) {
      const int rows = cfg.rows[t], colsb = cfg.colsb[t];
      if (t >= kTiles && (rows || colsb)) fault("LDTILECFG: a tile past the palette's 8 is configured", t);
      if (rows > kMaxRows || colsb > kMaxColsBytes) fault("LDTILECFG: tile larger than 16 rows x 64 bytes", t);
      if ((rows == 0) != (colsb == 0)) fault("LDTILECFG: tile with rows but no columns or the reverse", t);
    }
    s.cfg = cfg;
    s.configured = true;
    std::memset(s.data, 0, sizeof s.data);  // LDTILECFG zeroes the tile data
  }

  static void release() {
    EmulatedTileState &s = emulated_tiles;
    s.configured = false;
    s.cfg = TileConfig{};
    std::memset(s.data, 0, sizeof s.data);
  }

  template <int T>
  static void zero() {
    check_tile(T, "TILEZERO");
    std::memset(emulated_tiles.data[T], 0, sizeof emulated_tiles.data[T]);
  }

  // Rows [0, rows) of colsb bytes from base + r * stride; the rest of the
  // tile zero.
  template <int T>
  static void load(const void *base, long stride_bytes) {
    check_tile(T, "TILELOADD");
    const EmulatedTileState &s = emulated_tiles;
    uint8_t *d = emulated_tiles.data[T];
    std::memset(d, 0, kMaxRows * kMaxColsBytes);
    for (int r = 0; r < s.cfg.rows[T]; ++r)
      std::memcpy(d + r * kMaxColsBytes, static_cast<const uint8_t *>(base) + r * stride_bytes, s.cfg.colsb[T]);
  }

  // TILELOADDT1: a cache hint, the same load.
  template <int T>
  static void load_once(const void *base, long stride_bytes) {
    load<T>(base, stride_bytes);
  }

  template <int T>
  static void store(void *base, long stride_bytes) {
    check_tile(T, "TILESTORED");
    const EmulatedTileState &s = emulated_tiles;
    for (int r = 0; r < s.cfg.rows[T]; ++r)
      std::memcpy(static_cast<uint8_t *>(base) + r * stride_bytes, s.data[T] + r * kMaxColsBytes, s.cfg.colsb[T]);
  }

  template <int D, int S1, int S2>
  static void dpbf16ps() {
    static_assert(D != S1 && D != S2 && S1 != S2, "TDPBF16PS: the three tiles must differ (#UD)");
    check_tile(D, "TDPBF16PS");
    check_tile(S1, "TDPBF16PS");
    check_tile(S2, "TDPBF16PS");
    EmulatedTileState &s = emulated_tiles;
    const TileConfig &c = s.cfg;
    if (c.colsb[D] % 4 || c.colsb[S1] % 4 || c.colsb[S2] % 4) fault("TDPBF16PS: colsb not a multiple of 4", D);
    if (c.rows[D] != c.rows[S1]) fault("TDPBF16PS: dst and src1 rows differ", S1);
    if (c.colsb[S1] / 4 != c.rows[S2]) fault("TDPBF16PS: src1 pairs per row differ from src2 rows", S2);
    if (c.colsb[D] != c.colsb[S2]) fault("TDPBF16PS: dst and src2 bytes per row differ", S2);
    const int pairs = c.colsb[S1] / 4, n_out = c.colsb[D] / 4;
    for (int m = 0; m < c.rows[D]; ++m) {
      float tmp[kMaxColsBytes / 4];
      std::memcpy(tmp, s.data[D] + m * kMaxColsBytes, sizeof tmp);
      for (int k = 0; k < pairs; ++k)
        for (int n = 0; n < n_out; ++n)
          for (int e = 0; e < 2; ++e) {
            const float a = to_f32_daz(s.data[S1] + m * kMaxColsBytes + (2 * k + e) * 2);
            const float b = to_f32_daz(s.data[S2] + k * kMaxColsBytes + (2 * n + e) * 2);
            tmp[n] = ftz(std::fma(a, b, tmp[n]));  // a * b is exact in f32: one rounding
          }
      // write_row_and_zero: the columns past colsb of the row become zero.
      std::memset(s.data[D] + m * kMaxColsBytes, 0, kMaxColsBytes);
      std::memcpy(s.data[D] + m * kMaxColsBytes, tmp, c.colsb[D]);
    }
    for (int m = c.rows[D]; m < kMaxRows; ++m) std::memset(s.data[D] + m * kMaxColsBytes, 0, kMaxColsBytes);
    emulated_dpbf16ps_count.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  static void check_tile(int t, const char *insn) {
    const EmulatedTileState &s = emulated_tiles;
    if (!s.configured) fault("no tile configuration (LDTILECFG)", t, insn);
    if (t < 0 || t >= kTiles || s.cfg.rows[t] == 0) fault("tile not configured", t, insn);
  }
  static float to_f32_daz(const uint8_t *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    uint32_t u = static_cast<uint32_t>(h) << 16;
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;  // denormal (or zero) input: signed zero
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
};

}  // namespace hcops::kernels::amx
