// The 64-byte operand of ldtilecfg (Intel SDM vol. 2, LDTILECFG), shared by
// the hardware tiles (tiles_hw.h) and their emulation (tiles_emulated.h), so
// both read one and the same configuration.
//
//   byte 0       palette_id (1: 8 tiles of up to 16 rows x 64 bytes)
//   byte 1       start_row (0: restart nothing)
//   bytes 2-15   reserved, zero
//   bytes 16-47  colsb[16]: bytes per row of tile i, little-endian u16
//   bytes 48-63  rows[16]: rows of tile i
//
// Tiles past the palette's 8 must be left 0 x 0.
#pragma once

#include <cstdint>

namespace hcops::kernels::amx {

constexpr int kPalette = 1;
constexpr int kTiles = 8;          // palette 1
constexpr int kMaxRows = 16;       // palette 1
constexpr int kMaxColsBytes = 64;  // palette 1

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// Palette 1 with every tile `rows` x `colsb`.
inline TileConfig uniform_config(int rows, int colsb) {
  TileConfig cfg{};
  cfg.palette_id = kPalette;
  for (int t = 0; t < kTiles; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(rows);
    cfg.colsb[t] = static_cast<uint16_t>(colsb);
  }
  return cfg;
}

}  // namespace hcops::kernels::amx
