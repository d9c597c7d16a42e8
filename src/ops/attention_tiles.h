// Attention of one bf16 slice on AMX tiles, forward and backward, fused:
// the products of a block of queries run on the tiles straight from
// operands packed once per slice, and the row softmax and its backward
// (AVX-512, below) read the scores from L1 or L2. ops/attention.cpp's
// general path runs the same math as GEMMs of the engine, each of which
// packs its operands and plans its threads again: for DiT's 256 x 256
// slices that cost more than the products themselves.
//
// The math is ops/attention.h's (bf16 products with f32 sums; P and dS
// rounded to bf16 before the products that take them; dK and dV summed in
// f32 over the query blocks and rounded once), with three differences in
// rounding, each far below bf16's: the forward rounds exp(s - max) to bf16
// before dividing by the row's sum (it scales O instead, as PyTorch's own
// CPU kernel does); exp is exp2's polynomial below (2e-7); and values
// under 2^-126 are 0. tests/ops/test_attention_tiles.cpp bounds the
// results against f64.
//
// Layouts (T = 16: a tile's rows, and the f32 columns of a result tile;
// a tile row holds 32 bf16 = 16 pairs, the k steps of one TDPBF16PS):
//  - B of X K^T ("by keys"): for key block j (16 keys) and chunk c of 32
//    head elements, a tile whose row r holds pair r of the chunk for each
//    of the 16 keys: K's rows transposed as 16 x 16 blocks of pairs.
//  - B of P V ("by pairs of rows"): for a block f of 16 head elements and a
//    chunk c of 32 keys, a tile whose row r interleaves rows 2r and 2r + 1
//    of the chunk.
//  - A operands are rows with their k steps contiguous: Q, dO, P, dS as
//    they are (padded copies), and Q^T, dO^T (head elements x 32 queries)
//    for the key-side gradients, which are computed transposed (dK^T =
//    Q^T dS, dV^T = dO^T P) so that every A operand is a row-major block.
//
// Taken for S a multiple of 32 (whole tiles of keys, no masking of padded
// keys; DiT's 256 and 1024), any head size; the caller's general path
// otherwise. Templated on the tiles (kernels/amx/tiles_hw.h or
// tiles_emulated.h): ops/attention_amx.cpp is the hardware's, the tests
// run the same code on emulated tiles. Needs AVX-512 (BW) for the packing.
#pragma once

// GCC 12 warns inside its own unpack, cast and insert intrinsics (their
// _mm512_undefined_* operand), here and in transpose_pack.h's, once they
// are inlined; nothing here is uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "common/dtype.h"
#include "common/fault.h"
#include "kernels/amx/tile_config.h"
#include "kernels/avx512/transpose_pack.h"
#include "ops/attention.h"
#include "ops/softmax.h"

namespace hcops::ops::attention_tiles {
namespace {

constexpr int64_t kT = 16;     // rows of a tile; f32 columns of a result tile; pairs of a row
constexpr int64_t kK = 32;     // bf16 k steps of one TDPBF16PS
constexpr int64_t kTile = 512;  // bf16 values of a tile of 16 x 64 bytes
constexpr int kGroup = 4;      // result tiles at a time (tiles 0-3; A is tile 6, B tiles 4 and 5)

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Whether the fused kernel takes a slice of S keys.
inline bool takes(int64_t S) { return S > 0 && S % kK == 0; }

// A thread's work memory: one block, grown as needed and kept, so that a
// slice's call allocates at most once (and nothing after the first call of
// the largest shape); std::bad_alloc when it cannot grow (the shim turns
// that into PyTorch's out-of-memory error).
class Arena {
 public:
  Arena() = default;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  ~Arena() { std::free(p_); }
  char *get(size_t bytes) {
    if (bytes > bytes_) {
      if (fault::allocation_fails()) throw std::bad_alloc();
      void *q = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!q) throw std::bad_alloc();
      std::free(p_);
      p_ = q;
      bytes_ = bytes;
    }
    return static_cast<char *>(p_);
  }

 private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};
Arena &arena() {
  thread_local Arena a;
  return a;
}

// Pieces of the arena, each 64-byte aligned (the tile loads'); run once
// with no base to measure what a call needs, then on the arena.
struct Carve {
  char *base;
  size_t used = 0;
  template <typename T>
  T *take(int64_t n) {
    T *p = reinterpret_cast<T *>(base ? base + used : nullptr);
    used += (size_t(n) * sizeof(T) + 63) / 64 * 64;
    return p;
  }
};
template <class Layout>
auto carved(const Layout &layout) {
  Carve probe{nullptr};
  layout(probe);
  Carve real{arena().get(probe.used)};
  return layout(real);
}

// A mask of the first n (0-32) 16-bit lanes.
inline __mmask32 lanes16(int64_t n) { return n >= 32 ? ~__mmask32(0) : (__mmask32(1) << n) - 1; }

// "By keys": rows x E (rows a multiple of 16, E contiguous, row stride ld)
// into tiles (j, c) at out + (j * nc + c) * kTile, nc = ceil(E / 32), the
// head elements past E zero.
inline const bf16 *pack_by_keys(const bf16 *x, int64_t ld, int64_t rows, int64_t E, bf16 *out) {
  const int64_t nc = round_up(E, kK) / kK;
  for (int64_t j = 0; j < rows / kT; ++j)
    for (int64_t c = 0; c < nc; ++c) {
      const __mmask32 m = lanes16(E - c * kK);
      __m512 r[16];
      for (int n = 0; n < 16; ++n)
        r[n] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m, x + (j * kT + n) * ld + c * kK));
      kernels::avx512::transpose_square(r);  // pairs as 32-bit values: r[pair] = that pair of the 16 keys
      bf16 *t = out + (j * nc + c) * kTile;
      for (int r2 = 0; r2 < 16; ++r2) _mm512_store_ps(t + r2 * 32, r[r2]);
    }
  return out;
}

// Rows a and b (16 bf16 each, the first n of them; zero past n) interleaved:
// a0 b0 a1 b1 ... a15 b15.
inline __m512i interleave(const bf16 *a, const bf16 *b, int64_t n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi16(m, a)),
                                        _mm256_maskz_loadu_epi16(m, b), 1);
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                       21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, ab);
}

// "By pairs of rows": rows x E (rows a multiple of 32) into tiles (f, c) at
// out + (f * nc + c) * kTile, nc = rows / 32, f over ceil(E / 16) blocks of
// head elements, those past E zero.
inline const bf16 *pack_by_pairs(const bf16 *x, int64_t ld, int64_t rows, int64_t E, bf16 *out) {
  const int64_t nf = round_up(E, kT) / kT, nc = rows / kK;
  for (int64_t f = 0; f < nf; ++f)
    for (int64_t c = 0; c < nc; ++c) {
      bf16 *t = out + (f * nc + c) * kTile;
      const bf16 *x0 = x + c * kK * ld + f * kT;
      for (int r = 0; r < 16; ++r) _mm512_store_si512(t + r * 32, interleave(x0 + 2 * r * ld, x0 + (2 * r + 1) * ld, E - f * kT));
    }
  return out;
}

// A block of `rows` (<= height) rows of E elements into height x width
// (row stride width), zero past them.
inline void copy_block(const bf16 *x, int64_t ld, int64_t rows, int64_t E, int64_t height, int64_t width, bf16 *out) {
  for (int64_t r = 0; r < height; ++r)
    for (int64_t e = 0; e < width; e += kK) {
      const __mmask32 m = r < rows ? lanes16(E - e) : 0;
      _mm512_storeu_si512(out + r * width + e, _mm512_maskz_loadu_epi16(m, x + r * ld + e));
    }
}

// A block of 32 rows x width (width >= nf * 16) transposed: head element
// e's 32 values at out + e * ld_out, e < nf * 16 (an A operand of 16 head
// elements x the queries, k along its rows): row pairs interleaved, then
// 16 x 16 transposes of the pairs.
inline void transpose_block(const bf16 *x, int64_t width, int64_t nf, bf16 *out, int64_t ld_out) {
  for (int64_t f = 0; f < nf; ++f) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i)
      r[i] = _mm512_castsi512_ps(interleave(x + 2 * i * width + f * kT, x + (2 * i + 1) * width + f * kT, kT));
    kernels::avx512::transpose_square(r);
    for (int e = 0; e < 16; ++e) _mm512_storeu_ps(out + (f * kT + e) * ld_out, r[e]);
  }
}

// Interleaved pairs of rows of a 32 x S bf16 block (the B of a product
// over the block's queries): tile j (keys 16j..16j+15) at out + j * kTile.
inline void pair_rows(const bf16 *x, int64_t S, bf16 *out) {
  for (int64_t j = 0; j < S / kT; ++j)
    for (int r = 0; r < 16; ++r)
      _mm512_store_si512(out + j * kTile + r * 32, interleave(x + 2 * r * S + j * kT, x + (2 * r + 1) * S + j * kT, kT));
}

// Result tiles 0..G-1 (16 x 16 f32 each, side by side) = [the tiles at
// c_in +] sum over chunks c < nc of A_c B_{g,c}: A_c (tile 6) at a + c * kK,
// row stride a_stride bytes; B_{g,c} (tiles 4, 5 in turn) a packed tile at
// b(g, c). Stored at c_out, row stride c_stride bytes.
template <class Tiles, int G, class B>
void product(const bf16 *a, long a_stride, int64_t nc, const B &b, const float *c_in, float *c_out, long c_stride) {
  if (c_in) {
    Tiles::template load<0>(c_in, c_stride);
    if constexpr (G > 1) Tiles::template load<1>(c_in + kT, c_stride);
    if constexpr (G > 2) Tiles::template load<2>(c_in + 2 * kT, c_stride);
    if constexpr (G > 3) Tiles::template load<3>(c_in + 3 * kT, c_stride);
  } else {
    Tiles::template zero<0>();
    if constexpr (G > 1) Tiles::template zero<1>();
    if constexpr (G > 2) Tiles::template zero<2>();
    if constexpr (G > 3) Tiles::template zero<3>();
  }
  for (int64_t c = 0; c < nc; ++c) {
    Tiles::template load<6>(a + c * kK, a_stride);
    Tiles::template load<4>(b(0, c), 64);
    Tiles::template dpbf16ps<0, 6, 4>();
    if constexpr (G > 1) {
      Tiles::template load<5>(b(1, c), 64);
      Tiles::template dpbf16ps<1, 6, 5>();
    }
    if constexpr (G > 2) {
      Tiles::template load<4>(b(2, c), 64);
      Tiles::template dpbf16ps<2, 6, 4>();
    }
    if constexpr (G > 3) {
      Tiles::template load<5>(b(3, c), 64);
      Tiles::template dpbf16ps<3, 6, 5>();
    }
  }
  Tiles::template store<0>(c_out, c_stride);
  if constexpr (G > 1) Tiles::template store<1>(c_out + kT, c_stride);
  if constexpr (G > 2) Tiles::template store<2>(c_out + 2 * kT, c_stride);
  if constexpr (G > 3) Tiles::template store<3>(c_out + 3 * kT, c_stride);
}

// 16 rows x (16 * n) f32 results, n result tiles (n even: S / 16 key
// blocks, S a multiple of 32), kGroup at a time: tile t takes B at b(t, c);
// its result at c_out + 16 t (and c_in + 16 t).
template <class Tiles, class B>
void products(int64_t n, const bf16 *a, long a_stride, int64_t nc, const B &b, const float *c_in, float *c_out,
              long c_stride) {
  for (int64_t t0 = 0; t0 < n; t0 += kGroup) {
    auto bt = [&](int g, int64_t c) { return b(t0 + g, c); };
    const float *ci = c_in ? c_in + t0 * kT : nullptr;
    float *co = c_out + t0 * kT;
    if (n - t0 >= kGroup) product<Tiles, 4>(a, a_stride, nc, bt, ci, co, c_stride);
    else product<Tiles, 2>(a, a_stride, nc, bt, ci, co, c_stride);
  }
}

// Result tiles of 32 rows x 16 Gc columns (Gc = 1, 2), gemm_family.h's
// tiles: A rows 0-15 in tile 4, 16-31 in tile 5, B in 6 (and 7); results
// 0 (1) for rows 0-15, 2 (3) for rows 16-31. Each B tile serves both row
// tiles: half the B loads of two 16-row products, which streamed B (K, V
// packed: 192 KiB at 1024 keys) from L2 once per 16 queries.
template <class Tiles, int Gc, class B>
void product32(const bf16 *a, long a_stride, int64_t nc, const B &b, const float *c_in, float *c_out, long c_stride) {
  // Rows 16-31 (strides are in bytes, as the tile instructions take them,
  // and always whole elements here).
  const bf16 *a2 = a + kT * (a_stride / long(sizeof(bf16)));
  const long c_rows16 = kT * (c_stride / long(sizeof(float)));
  auto at_row16 = [&](auto *c) { return c + c_rows16; };
  if (c_in) {
    Tiles::template load<0>(c_in, c_stride);
    Tiles::template load<2>(at_row16(c_in), c_stride);
    if constexpr (Gc > 1) {
      Tiles::template load<1>(c_in + kT, c_stride);
      Tiles::template load<3>(at_row16(c_in) + kT, c_stride);
    }
  } else {
    Tiles::template zero<0>();
    Tiles::template zero<2>();
    if constexpr (Gc > 1) {
      Tiles::template zero<1>();
      Tiles::template zero<3>();
    }
  }
  for (int64_t c = 0; c < nc; ++c) {
    Tiles::template load<4>(a + c * kK, a_stride);
    Tiles::template load<6>(b(0, c), 64);
    Tiles::template dpbf16ps<0, 4, 6>();
    Tiles::template load<5>(a2 + c * kK, a_stride);
    Tiles::template dpbf16ps<2, 5, 6>();
    if constexpr (Gc > 1) {
      Tiles::template load<7>(b(1, c), 64);
      Tiles::template dpbf16ps<1, 4, 7>();
      Tiles::template dpbf16ps<3, 5, 7>();
    }
  }
  Tiles::template store<0>(c_out, c_stride);
  Tiles::template store<2>(at_row16(c_out), c_stride);
  if constexpr (Gc > 1) {
    Tiles::template store<1>(c_out + kT, c_stride);
    Tiles::template store<3>(at_row16(c_out) + kT, c_stride);
  }
}

// products() for 32 rows of A (rows 16-31 at a + 16 a_stride bytes) and of
// the results.
template <class Tiles, class B>
void products32(int64_t n, const bf16 *a, long a_stride, int64_t nc, const B &b, const float *c_in, float *c_out,
                long c_stride) {
  for (int64_t t0 = 0; t0 < n; t0 += 2) {
    auto bt = [&](int g, int64_t c) { return b(t0 + g, c); };
    const float *ci = c_in ? c_in + t0 * kT : nullptr;
    float *co = c_out + t0 * kT;
    if (n - t0 >= 2) product32<Tiles, 2>(a, a_stride, nc, bt, ci, co, c_stride);
    else product32<Tiles, 1>(a, a_stride, nc, bt, ci, co, c_stride);
  }
}

// As attention.cpp's ScoreScale: a positive finite scale is applied by the
// softmax as it reads the scores; any other multiplies them first.
inline bool folds(float scale) { return scale > 0 && std::isfinite(scale); }

// The scores of `rows` rows (row stride S) times a scale the softmax does
// not fold, and the causal mask (query i0 + r sees keys <= i0 + r).
inline void finish_scores(float *s, int64_t rows, int64_t S, int64_t i0, float scale, bool causal) {
  if (!folds(scale))
    for (int64_t i = 0; i < rows * S; ++i) s[i] *= scale;
  if (causal)
    for (int64_t r = 0; r < rows; ++r)
      std::fill(s + r * S + std::min(S, i0 + r + 1), s + (r + 1) * S, -std::numeric_limits<float>::infinity());
}

// 2^t, to about 2e-7 relative (f32's rounding is 6e-8; P is rounded to
// bf16, 2^-9, before any product takes it): 2^f for f = t - round(t) in
// [-1/2, 1/2] by a polynomial of degree 6 (Cephes' exp2f coefficients),
// scaled by 2^round(t) in one vscalefps. Below t = -126 the result is 0,
// not a denormal: a denormal result or operand costs a microcode assist
// per instruction (a 256-token slice whose scores spread over 90 units ran
// 10x slower), and a value under 2^-126 next to the row's largest (1, or
// at least 1 / S) changes no f32 sum. A NaN t gives NaN.
inline __m512 exp2(__m512 t) {
  const __mmask16 live = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);  // t >= -126, or NaN
  t = _mm512_max_ps(_mm512_set1_ps(-127.0f), t);  // max keeps its second operand, a NaN t
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 y = _mm512_set1_ps(1.535336188319500e-4f);
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.339887440266574e-3f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(9.618437357674640e-3f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(5.550332471162809e-2f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(2.402264791363012e-1f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(6.931472028550421e-1f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(live, y, n);
}
constexpr float kLog2e = 1.44269504088896341f;

inline __m256i to_bf16(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }

// The forward's softmax of a block's scores (rows x S, row stride S), in two
// passes over L1: the row's maximum m, then e = exp(scale (x - m)) rounded
// to bf16 into p, unnormalised, and its sum, whose reciprocal is the row's
// factor for O (PyTorch's own CPU kernel scales O the same way: the
// rounding of e and of e / sum are the same relative size); lse = scale m +
// log(sum). A NaN score makes its row NaN.
inline void softmax_block(const float *s, int64_t rows, int64_t S, float scale, bf16 *p, float *inv_sum, float *lse,
                          int64_t ld_lse) {
  const __m512 vc = _mm512_set1_ps(scale * kLog2e);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = s + r * S;
    __m512 m0 = _mm512_set1_ps(-std::numeric_limits<float>::infinity()), m1 = m0;
    for (int64_t j = 0; j < S; j += 2 * kT) {
      m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
      m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + kT));
    }
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    const __m512 vb = _mm512_set1_ps(m * scale * kLog2e);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (int64_t j = 0; j < S; j += 2 * kT) {
      const __m512 e0 = exp2(_mm512_fmsub_ps(_mm512_loadu_ps(x + j), vc, vb));
      const __m512 e1 = exp2(_mm512_fmsub_ps(_mm512_loadu_ps(x + j + kT), vc, vb));
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(p + r * S + j), to_bf16(e0));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(p + r * S + j + kT), to_bf16(e1));
    }
    const float sum = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    inv_sum[r] = 1.0f / sum;
    lse[r * ld_lse] = m * scale + std::log(sum);
  }
}

// The backward's row pass over a block (rows x S): P = exp(scale x - lse)
// from the forward's logsumexp, divided by the row's sum where that is 1
// to lse's rounding (lse_is_rows: the row's own logsumexp; else as
// computed, as attention.cpp), rounded to bf16 into p16; D = rowsum(dP P)
// there, else rowsum(dO O) from the forward's output (attention.cpp's
// row_sums_of_dp_p); dS = P (dP - D) rounded into ds16. s is overwritten
// with exp(scale x - lse). Three passes over L1, one exp per element.
inline void softmax_grad_block(float *s, const float *dp, int64_t rows, int64_t S, float scale, const float *lse,
                               int64_t ld_lse, bf16 *p16, bf16 *ds16, const bf16 *dout, int64_t ld_dout,
                               const bf16 *out, int64_t ld_out, int64_t E) {
  const __m512 vc = _mm512_set1_ps(scale * kLog2e);
  for (int64_t r = 0; r < rows; ++r) {
    float *x = s + r * S;
    const float *g = dp + r * S;
    const __m512 vb = _mm512_set1_ps(lse[r * ld_lse] * kLog2e);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (int64_t j = 0; j < S; j += 2 * kT) {
      const __m512 e0 = exp2(_mm512_fmsub_ps(_mm512_loadu_ps(x + j), vc, vb));
      const __m512 e1 = exp2(_mm512_fmsub_ps(_mm512_loadu_ps(x + j + kT), vc, vb));
      _mm512_storeu_ps(x + j, e0);
      _mm512_storeu_ps(x + j + kT, e1);
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
    }
    const float sum = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    const bool own = lse_is_rows(sum);
    const __m512 inv = _mm512_set1_ps(own ? 1.0f / sum : 1.0f);
    __m512 d0 = _mm512_setzero_ps(), d1 = d0;
    for (int64_t j = 0; j < S; j += 2 * kT) {
      const __m512 p0 = _mm512_mul_ps(_mm512_loadu_ps(x + j), inv), p1 = _mm512_mul_ps(_mm512_loadu_ps(x + j + kT), inv);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(p16 + r * S + j), to_bf16(p0));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(p16 + r * S + j + kT), to_bf16(p1));
      d0 = _mm512_fmadd_ps(_mm512_loadu_ps(g + j), p0, d0);
      d1 = _mm512_fmadd_ps(_mm512_loadu_ps(g + j + kT), p1, d1);
    }
    float d = _mm512_reduce_add_ps(_mm512_add_ps(d0, d1));
    if (!own) {
      d = 0;
      for (int64_t e = 0; e < E; ++e) d += float(dout[r * ld_dout + e]) * float(out[r * ld_out + e]);
    }
    const __m512 vd = _mm512_set1_ps(d);
    for (int64_t j = 0; j < S; j += kT) {
      const __m512 pj = _mm512_mul_ps(_mm512_loadu_ps(x + j), inv);
      const __m512 ds = _mm512_mul_ps(pj, _mm512_sub_ps(_mm512_loadu_ps(g + j), vd));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(ds16 + r * S + j), to_bf16(ds));
    }
  }
}

template <class Tiles>
void configure() {
  static const kernels::amx::TileConfig cfg = kernels::amx::uniform_config(kT, 64);
  Tiles::configure(cfg);
}

// Rows of f32 results (row stride ld_x), row r times scale[r] (or all
// times *scale: step 0), rounded into bf16 rows of E elements.
inline void store_rows(const float *x, int64_t ld_x, int64_t rows, int64_t E, const float *scale, int64_t step,
                       bf16 *y, int64_t ld_y) {
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 vs = _mm512_set1_ps(scale[r * step]);
    for (int64_t e = 0; e < E; e += kT) {
      const __mmask16 m = E - e >= kT ? __mmask16(0xffff) : __mmask16((1u << (E - e)) - 1);
      const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + r * ld_x + e), vs);
      _mm256_mask_storeu_epi16(y + r * ld_y + e, m, to_bf16(v));
    }
  }
}

// The E x S f32 sums (row stride S) transposed into S rows of E bf16
// elements, times `scale`: 16 x 16 blocks.
inline void store_transposed(const float *x, int64_t S, int64_t E, float scale, bf16 *y, int64_t ld_y) {
  const __m512 vs = _mm512_set1_ps(scale);
  for (int64_t e0 = 0; e0 < E; e0 += kT) {
    const int64_t ne = std::min<int64_t>(kT, E - e0);
    const __mmask16 m = ne >= kT ? __mmask16(0xffff) : __mmask16((1u << ne) - 1);
    for (int64_t j = 0; j < S; j += kT) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = i < ne ? _mm512_loadu_ps(x + (e0 + i) * S + j) : _mm512_setzero_ps();
      kernels::avx512::transpose_square(r);
      for (int i = 0; i < 16; ++i)
        _mm256_mask_storeu_epi16(y + (j + i) * ld_y + e0, m, to_bf16(_mm512_mul_ps(r[i], vs)));
    }
  }
}

// O = softmax(scale Q K^T) V and the rows' logsumexp, 32 queries at a time:
// their scores (32 x S f32, 32 KiB for S = 256) and P (bf16) stay in L1
// or L2.
template <class Tiles>
void forward(const AttentionSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  const int64_t Ep = round_up(E, kK), nce = Ep / kK;  // chunks of head elements: k of Q K^T
  const int64_t En = round_up(E, kT), nf = En / kT;   // blocks of head elements: columns of P V
  const int64_t nkb = S / kT, nkc = S / kK;           // key blocks (columns of Q K^T), chunks (k of P V)
  struct Work {
    bf16 *kt, *vv, *q, *p;
    float *s, *o, *inv_sum;
  };
  const Work w = carved([&](Carve &c) {
    return Work{c.take<bf16>(nkb * nce * kTile), c.take<bf16>(nf * nkc * kTile), c.take<bf16>(kK * Ep),
                c.take<bf16>(kK * S),            c.take<float>(kK * S),          c.take<float>(kK * En),
                c.take<float>(kK)};
  });
  const bf16 *kt = pack_by_keys(a.k, a.ld_k, S, E, w.kt);
  const bf16 *vv = pack_by_pairs(a.v, a.ld_v, S, E, w.vv);
  bf16 *q = w.q, *p = w.p;
  float *s = w.s, *o = w.o, *inv_sum = w.inv_sum;
  const float softmax_scale = folds(scale) ? scale : 1.0f;
  configure<Tiles>();
  for (int64_t i0 = 0; i0 < L; i0 += kK) {
    const int64_t rows = std::min(kK, L - i0);
    copy_block(a.q + i0 * a.ld_q, a.ld_q, rows, E, kK, Ep, q);
    products32<Tiles>(nkb, q, Ep * 2, nce, [&](int64_t j, int64_t c) { return kt + (j * nce + c) * kTile; }, nullptr,
                      s, S * 4);
    finish_scores(s, rows, S, i0, scale, causal);
    softmax_block(s, rows, S, softmax_scale, p, inv_sum, a.lse + i0 * a.ld_lse, a.ld_lse);
    products32<Tiles>(nf, p, S * 2, nkc, [&](int64_t f, int64_t c) { return vv + (f * nkc + c) * kTile; }, nullptr,
                      o, En * 4);
    store_rows(o, En, rows, E, inv_sum, 1, a.out + i0 * a.ld_out, a.ld_out);
  }
  Tiles::release();
}

// Query blocks of 32 rows per row pass, and of up to kSub such blocks per
// update of the key-side sums: the k of dV^T += dO^T P and dK^T += Q^T dS,
// whose f32 results go through memory once per update (at k = 32 their
// loads and stores took longer than the products).
constexpr int64_t kSub = 4;

// The gradients: S = scale Q K^T and dP = dO V^T on the tiles 32 queries
// at a time, P from the forward's logsumexp and dS = P (dP - D)
// (softmax_grad_block), dQ = scale dS K written per 32 queries; dV^T +=
// dO^T P and dK^T += Q^T dS (f32 sums, in L2) per kSub x 32 queries;
// scale dK^T and dV^T transposed into dK and dV at the end.
template <class Tiles>
void backward(const AttentionGradSlice<bf16> &a, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  const int64_t Ep = round_up(E, kK), nce = Ep / kK;
  const int64_t En = round_up(E, kT), nf = En / kT;
  const int64_t nkb = S / kT, nkc = S / kK;
  constexpr int64_t kQb = kSub * kK;  // queries per update
  struct Work {
    bf16 *kt, *vt, *kv, *q, *dout, *qt, *doutt, *p16, *ds16, *pv, *dsv;
    float *s, *dp, *dkt, *dvt, *o;
  };
  const Work w = carved([&](Carve &c) {
    Work x;
    x.kt = c.take<bf16>(nkb * nce * kTile), x.vt = c.take<bf16>(nkb * nce * kTile);
    x.kv = c.take<bf16>(nf * nkc * kTile);
    x.q = c.take<bf16>(kK * Ep), x.dout = c.take<bf16>(kK * Ep);
    x.qt = c.take<bf16>(En * kQb), x.doutt = c.take<bf16>(En * kQb);  // En x kQb: A of the updates
    x.p16 = c.take<bf16>(kK * S), x.ds16 = c.take<bf16>(kK * S);
    x.pv = c.take<bf16>(kSub * nkb * kTile), x.dsv = c.take<bf16>(kSub * nkb * kTile);  // B of the updates
    x.s = c.take<float>(kK * S), x.dp = c.take<float>(kK * S);
    x.dkt = c.take<float>(En * S), x.dvt = c.take<float>(En * S), x.o = c.take<float>(kK * En);
    return x;
  });
  const bf16 *kt = pack_by_keys(a.k, a.ld_k, S, E, w.kt);   // B of Q K^T
  const bf16 *vt = pack_by_keys(a.v, a.ld_v, S, E, w.vt);   // B of dO V^T
  const bf16 *kv = pack_by_pairs(a.k, a.ld_k, S, E, w.kv);  // B of dS K
  bf16 *q = w.q, *dout = w.dout, *qt = w.qt, *doutt = w.doutt, *p16 = w.p16, *ds16 = w.ds16, *pv = w.pv,
       *dsv = w.dsv;
  float *s = w.s, *dp = w.dp, *dkt = w.dkt, *dvt = w.dvt, *o = w.o;
  std::fill(dkt, dkt + En * S, 0.0f);
  std::fill(dvt, dvt + En * S, 0.0f);
  const float softmax_scale = folds(scale) ? scale : 1.0f;
  auto by_keys = [](const bf16 *packed, int64_t nc) {
    return [=](int64_t j, int64_t c) { return packed + (j * nc + c) * kTile; };
  };
  configure<Tiles>();
  for (int64_t u0 = 0; u0 < L; u0 += kQb) {
    const int64_t nsub = std::min(kSub, (L - u0 + kK - 1) / kK);
    for (int64_t u = 0; u < nsub; ++u) {
      const int64_t i0 = u0 + u * kK, rows = std::min(kK, L - i0);
      copy_block(a.q + i0 * a.ld_q, a.ld_q, rows, E, kK, Ep, q);
      copy_block(a.dout + i0 * a.ld_dout, a.ld_dout, rows, E, kK, Ep, dout);
      products32<Tiles>(nkb, q, Ep * 2, nce, by_keys(kt, nce), nullptr, s, S * 4);
      products32<Tiles>(nkb, dout, Ep * 2, nce, by_keys(vt, nce), nullptr, dp, S * 4);
      finish_scores(s, rows, S, i0, scale, causal);
      softmax_grad_block(s, dp, rows, S, softmax_scale, a.lse + i0 * a.ld_lse, a.ld_lse, p16, ds16,
                         a.dout + i0 * a.ld_dout, a.ld_dout, a.out + i0 * a.ld_out, a.ld_out, E);
      if (rows < kK) {  // the rows past the block's queries add nothing to dK, dV
        std::fill(p16 + rows * S, p16 + kK * S, bf16());
        std::fill(ds16 + rows * S, ds16 + kK * S, bf16());
      }
      pair_rows(p16, S, pv + u * nkb * kTile);
      pair_rows(ds16, S, dsv + u * nkb * kTile);
      transpose_block(q, Ep, nf, qt + u * kK, kQb);
      transpose_block(dout, Ep, nf, doutt + u * kK, kQb);
      products32<Tiles>(nf, ds16, S * 2, nkc, [&](int64_t f, int64_t c) { return kv + (f * nkc + c) * kTile; },
                        nullptr, o, En * 4);  // dQ = scale dS K
      store_rows(o, En, rows, E, &scale, 0, a.dq + i0 * a.ld_dq, a.ld_dq);
    }
    // B of chunk c (query block c of this update) for key block j.
    auto paired = [nkb](const bf16 *x) { return [=](int64_t j, int64_t c) { return x + (c * nkb + j) * kTile; }; };
    for (int64_t f = 0; f < nf; f += 2) {  // 32 head elements at a time, 16 for an odd last
      float *dv_f = dvt + f * kT * S, *dk_f = dkt + f * kT * S;
      const bf16 *doutt_f = doutt + f * kT * kQb, *qt_f = qt + f * kT * kQb;
      if (f + 1 < nf) {
        products32<Tiles>(nkb, doutt_f, kQb * 2, nsub, paired(pv), dv_f, dv_f, S * 4);  // dV^T += dO^T P
        products32<Tiles>(nkb, qt_f, kQb * 2, nsub, paired(dsv), dk_f, dk_f, S * 4);    // dK^T += Q^T dS
      } else {
        products<Tiles>(nkb, doutt_f, kQb * 2, nsub, paired(pv), dv_f, dv_f, S * 4);
        products<Tiles>(nkb, qt_f, kQb * 2, nsub, paired(dsv), dk_f, dk_f, S * 4);
      }
    }
  }
  Tiles::release();
  store_transposed(dkt, S, E, scale, a.dk, a.ld_dk);
  store_transposed(dvt, S, E, 1.0f, a.dv, a.ld_dv);
}

}  // namespace
}  // namespace hcops::ops::attention_tiles

#pragma GCC diagnostic pop
