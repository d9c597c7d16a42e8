// The op(A) = A loop shared by the skinny kernels (kernels/skinny.h for f32
// and f64, avx512_bf16/skinny_bf16.h for bf16): C's rows in panels of
// blocks, k in chunks of kChunkSteps. A panel's sums stay in kPanelSumBytes
// of L1 across the chunks, and each chunk is worked through one block at a
// time, so that a chunk's part of A (kChunkSteps columns of the panel's
// rows) is read from memory once, each column's rows in one run (the
// kernels' headers give the measurements). Each row is still summed along k
// in order, so the bits are those of one pass over k.
#pragma once

#include <algorithm>
#include <type_traits>

namespace hcops::kernels::skinny_panels {
// In an anonymous namespace: included by families built with different -m
// flags (skinny.h), each of which must keep its own copy.
namespace {

constexpr long kPanelSumBytes = 16 << 10;  // in L1
constexpr long kMaxPanelRows = 2048;
constexpr long kChunkSteps = 64;  // even: bf16 takes k in pairs, and only an odd k's last chunk has a lone step

// Rows of C a panel holds for n columns: as many whole blocks of `block`
// rows as kPanelSumBytes hold when a block's sums take bytes_per_column for
// each column; at least one block, at most kMaxPanelRows.
inline long panel_rows(long n, long block, long bytes_per_column) {
  return std::clamp<long>(kPanelSumBytes / (bytes_per_column * std::max<long>(n, 1)), 1, kMaxPanelRows / block) *
         block;
}

// Rows [0, m) of C in panels of `panel` rows (a multiple of `block`), k
// in chunks: for each panel, clear(blocks); then for each chunk [p0, p0 +
// kc) and each of the panel's blocks, chunk(rb, i, rows, p0, kc, next_i,
// next_p0) (block rb of the panel, C's rows [i, i + rows), rows <= block;
// next_i and next_p0 the row and step at which the walk's next chunk call
// starts, -1 for the last: what a kernel may fetch ahead); then store(rb,
// i, rows) for each block.
template <class Clear, class Chunk, class Store>
void for_each_panel(long m, long k, long block, long panel, const Clear &clear, const Chunk &chunk,
                    const Store &store) {
  for (long i0 = 0; i0 < m; i0 += panel) {
    const long rows = std::min(panel, m - i0), blocks = (rows + block - 1) / block;
    const auto block_rows = [&](long rb) { return std::min(block, rows - rb * block); };
    clear(blocks);
    for (long p0 = 0; p0 < k; p0 += kChunkSteps) {
      const long kc = std::min(kChunkSteps, k - p0);
      for (long rb = 0; rb < blocks; ++rb) {
        // Next: the panel's next block; after its last, the next chunk's
        // first; after the last chunk, the next panel's first; or none.
        long next_i = i0 + (rb + 1) * block, next_p0 = p0;
        if (rb + 1 == blocks) {
          next_i = i0;
          next_p0 = p0 + kc;
        }
        if (next_p0 >= k) {
          next_i = i0 + panel < m ? i0 + panel : -1;
          next_p0 = next_i < 0 ? -1 : 0;
        }
        chunk(rb, i0 + rb * block, block_rows(rb), p0, kc, next_i, next_p0);
      }
    }
    for (long rb = 0; rb < blocks; ++rb) store(rb, i0 + rb * block, block_rows(rb));
  }
}

// n columns in passes of kWidest (8 or 4), then one pass of the last n %
// kWidest: pass(nb, j) with nb a std::integral_constant<int, NB>, for
// columns [j, j + NB) (the kernels' n_chunk<NB> keep NB columns of sums in
// registers, as many as the family's registers hold).
template <int kWidest = 8, class Pass>
void column_passes(long n, const Pass &pass) {
  static_assert(kWidest == 8 || kWidest == 4, "passes of 8 or 4 columns");
  long j = 0;
  for (; j + kWidest <= n; j += kWidest) pass(std::integral_constant<int, kWidest>{}, j);
  switch (n - j) {
    case 1: pass(std::integral_constant<int, 1>{}, j); break;
    case 2: pass(std::integral_constant<int, 2>{}, j); break;
    case 3: pass(std::integral_constant<int, 3>{}, j); break;
    case 4: if constexpr (kWidest > 4) pass(std::integral_constant<int, 4>{}, j); break;
    case 5: if constexpr (kWidest > 5) pass(std::integral_constant<int, 5>{}, j); break;
    case 6: if constexpr (kWidest > 6) pass(std::integral_constant<int, 6>{}, j); break;
    case 7: if constexpr (kWidest > 7) pass(std::integral_constant<int, 7>{}, j); break;
    default: break;
  }
}

}  // namespace
}  // namespace hcops::kernels::skinny_panels
