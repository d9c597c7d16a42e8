// The vectorised packers of the avx512_bf16 family (32 x 12 panels) and of
// the avx2 family (16 x 6, bf16 inputs only) against the portable ones of
// kernels/pack_pairs.h, bit for bit: both layouts of op(A) and op(B), every
// bf16 datatype combination the family serves (bf16 in; f32 rounded to bf16; f32 split
// into bf16x3's hi/lo slots), random shapes, offsets, leading dimensions and
// odd k, and values that take the rounding's corners (ties, NaN payloads,
// Inf, values that round to Inf, denormals, which vcvtne2ps2bf16 flushes
// while dtype.h's bf16 keeps them). Every slot of the packed buffer is
// compared (it starts as garbage, so a slot left unwritten shows), and each
// operand ends against an inaccessible page, so a read past it crashes.
// A family this CPU cannot run is skipped, and said so; the test is
// skipped where neither runs. Also the widened panels (f32, bf16_tile.h)
// of the avx512 and avx512_bf16 families against op(A) and op(B) themselves.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "kernels/kernel.h"
#include "kernels/pack_pairs.h"
#include "kernels/registry.h"
#include "common/fenced.h"

namespace {

using hcops::bf16;
using hcops::Trans;

std::mt19937 rng(20261123);

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Mostly ordinary values, one in eight a corner of the rounding.
float random_float() {
  std::uniform_real_distribution<float> u(-4, 4);
  if (rng() % 8) return u(rng);
  const uint32_t low = rng() & 0xffffu, sign = (rng() & 1u) << 31;
  switch (rng() % 8) {
    case 0: return from_bits(sign | 0x7f800000u | 1u | low);                     // NaN, payload in the low half
    case 1: return from_bits(sign | 0x7fc00000u | (rng() & 0x3fffffu));          // quiet NaN
    case 2: return from_bits(sign | 0x7f800000u);                                // Inf
    case 3: return from_bits(sign | 0x7f7f8000u | low);                          // rounds to Inf or to max
    case 4: return from_bits(sign | (rng() & 0x007fffffu));                      // denormal (or zero)
    case 5: return from_bits(sign | 0x00800000u | (rng() & 0x7fffu) | 0x8000u);  // smallest normals, halfway up
    case 6: return from_bits(sign | ((rng() & 0x7f000000u) >> 1) | 0x8000u);     // ties
    default: return from_bits(sign);                                             // signed zero
  }
}
void fill(float &x) { x = random_float(); }
void fill(bf16 &x) { x.bits = static_cast<uint16_t>(rng()); }

template <typename Ty>
const hcops::GemmKernel<Ty> *family_kernel(const char *family) {
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (std::strcmp(f.name, family) || !hcops::family_runs_here(f)) continue;
    for (int j = 0; j < f.kernels->count; ++j)
      if (f.kernels->refs[j].serves<Ty>()) return f.kernels->refs[j].get<Ty>();
  }
  return nullptr;
}

bool runs_here(const char *family) {
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (!std::strcmp(f.name, family)) return hcops::family_runs_here(f);
  }
  return false;
}

// One random block of op(X) packed both ways; `a` picks A (pack_a, width
// MR) or B (pack_b, width NR).
template <typename Ty>
void check_block(const hcops::GemmKernel<Ty> &k, bool a, Trans t) {
  using Src = typename Ty::a_type;
  constexpr int S = Ty::splits;
  const int width = a ? k.mr : k.nr;
  // Panels with a partial one (B: also past the packers' runs of 8 panels), odd k.
  const long len = 1 + rng() % (a ? 3 * width + 5 : 20 * width + 5), kc = 1 + rng() % 75;
  // (kc up to 75: several groups of 8 pairs, which avx2 transposes at once, and their tails.)
  const long off = rng() % 5, p0 = rng() % 4;
  // op(X) is len x kc at (off, p0) (A) or kc x len at (p0, off) (B); rows of
  // the stored X are its contiguous dimension.
  const bool len_contiguous = a == (t == Trans::N);
  const long rows = len_contiguous ? off + len : p0 + kc, cols = len_contiguous ? p0 + kc : off + len;
  const long ld = rows + rng() % 7;
  FencedArray<Src> x(ld * (cols - 1) + rows);
  for (long i = 0; i < ld * (cols - 1) + rows; ++i) fill(x.data[i]);

  const long panels = (len + width - 1) / width, depth = hcops::packed_steps(kc, S, k.k_align);
  const size_t n = static_cast<size_t>(panels * width * depth);
  std::vector<bf16> want(n + 64), got(n + 64);
  for (bf16 &v : want) v.bits = 0xdead;
  for (bf16 &v : got) v.bits = 0xbeef;
  // 64-byte aligned, as the driver's buffers.
  bf16 *w = want.data() + (64 - reinterpret_cast<uintptr_t>(want.data()) % 64) / 2 % 32;
  bf16 *g = got.data() + (64 - reinterpret_cast<uintptr_t>(got.data()) % 64) / 2 % 32;
  if (a) {
    hcops::pack_a_pairs_width<Src, S>(w, x.data, ld, t, off, len, p0, kc, width);
    k.pack_a(g, x.data, ld, t, off, len, p0, kc);
  } else {
    hcops::pack_b_pairs_width<Src, S>(w, x.data, ld, t, p0, kc, off, len, width);
    k.pack_b(g, x.data, ld, t, p0, kc, off, len);
  }
  for (size_t i = 0; i < n; ++i)
    if (w[i].bits != g[i].bits)
      fail_msg("%s %c, splits %d: %ld x %ld block at (%ld, %ld), ld %ld: slot %zu is %04x, want %04x", a ? "A" : "B",
               static_cast<char>(t), S, a ? len : kc, a ? kc : len, a ? off : p0, a ? p0 : off, ld, i, g[i].bits,
               w[i].bits);
  // Nothing written past the panels.
  assert_int_equal(g[n].bits, 0xbeef);
}

// Ty's packers in `family`, which must serve it (with `tile`: its mr x nr).
template <typename Ty>
void check_type(const char *family, const char *name, int mr, int nr) {
  if (!runs_here(family)) {
    std::printf("SKIP: %s %s: this CPU does not run the family\n", family, name);
    return;
  }
  const hcops::GemmKernel<Ty> *k = family_kernel<Ty>(family);
  if (!k) fail_msg("%s does not serve %s", family, name);
  assert_int_equal(k->mr, mr);
  assert_int_equal(k->nr, nr);
  assert_int_equal(k->k_align, 2);
  for (int rep = 0; rep < 40; ++rep)
    for (bool a : {true, false})
      for (Trans t : {Trans::N, Trans::T}) check_block<Ty>(*k, a, t);
  std::printf("%s %s: 160 blocks packed as pack_pairs.h packs them\n", family, name);
}

// The widened tile's A panels (avx512/bf16_tile.h's pack_a_wide, panel_scale
// 2): f32, 32 values a step, each op(A) value widened exactly (a bf16 is the
// high half of its f32: NaN payloads, denormals and signed zeros kept), k
// rounded up to even steps and rows up to whole panels with zeros. Compared
// bit for bit over the whole buffer, which starts as garbage, with a guard
// past it.
template <typename Ty>
void check_wide_a(const hcops::GemmKernel<Ty> &k, Trans t) {
  const long len = 1 + rng() % (3 * 32 + 5), kc = 1 + rng() % 75;
  const long off = rng() % 5, p0 = rng() % 4;
  const bool len_contiguous = t == Trans::N;
  const long rows = len_contiguous ? off + len : p0 + kc, cols = len_contiguous ? p0 + kc : off + len;
  const long ld = rows + rng() % 7;
  FencedArray<bf16> x(ld * (cols - 1) + rows);
  for (long i = 0; i < ld * (cols - 1) + rows; ++i) fill(x.data[i]);
  const auto at = [&](long i, long p) { return t == Trans::N ? x.data[i + p * ld] : x.data[p + i * ld]; };

  const long panels = (len + 31) / 32, depth = hcops::packed_steps(kc, 1, k.k_align);
  const size_t n = static_cast<size_t>(panels * 32 * depth);  // f32 values
  std::vector<uint32_t> want(n);
  for (long pi = 0; pi < panels; ++pi)
    for (long p = 0; p < depth; ++p)
      for (long r = 0; r < 32; ++r) {
        const long i = pi * 32 + r;
        want[size_t((pi * depth + p) * 32 + r)] = i < len && p < kc ? uint32_t(at(off + i, p0 + p).bits) << 16 : 0u;
      }
  std::vector<uint32_t> got(n + 32, 0xbeefbeefu);
  uint32_t *g = got.data() + (64 - reinterpret_cast<uintptr_t>(got.data()) % 64) / 4 % 16;  // 64-byte aligned
  k.pack_a(reinterpret_cast<bf16 *>(g), x.data, ld, t, off, len, p0, kc);
  for (size_t i = 0; i < n; ++i)
    if (g[i] != want[i])
      fail_msg("widened A %c: %ld x %ld block at (%ld, %ld), ld %ld: slot %zu is %08x, want %08x", static_cast<char>(t),
               len, kc, off, p0, ld, i, g[i], want[i]);
  assert_int_equal(g[n], 0xbeefbeefu);  // nothing written past the panels
}

// The widened tile's B panels (pack_b_wide): f32, 12 values a step, zero
// past the block's columns and its last (odd) step. Wider and deeper than
// the packer's own chunks (8 panels, 128 steps) so that their seams are
// crossed.
template <typename Ty>
void check_wide_b(const hcops::GemmKernel<Ty> &k, Trans t) {
  const long len = 1 + rng() % 230, kc = 1 + rng() % 300;
  const long off = rng() % 5, p0 = rng() % 4;
  const bool len_contiguous = t == Trans::T;
  const long rows = len_contiguous ? off + len : p0 + kc, cols = len_contiguous ? p0 + kc : off + len;
  const long ld = rows + rng() % 7;
  FencedArray<bf16> x(ld * (cols - 1) + rows);
  for (long i = 0; i < ld * (cols - 1) + rows; ++i) fill(x.data[i]);
  const auto at = [&](long p, long j) { return t == Trans::N ? x.data[p + j * ld] : x.data[j + p * ld]; };

  const long panels = (len + 11) / 12, depth = hcops::packed_steps(kc, 1, k.k_align);
  const size_t n = static_cast<size_t>(panels * 12 * depth);
  std::vector<uint32_t> want(n);
  for (long pj = 0; pj < panels; ++pj)
    for (long p = 0; p < depth; ++p)
      for (long c = 0; c < 12; ++c) {
        const long j = pj * 12 + c;
        want[size_t((pj * depth + p) * 12 + c)] = j < len && p < kc ? uint32_t(at(p0 + p, off + j).bits) << 16 : 0u;
      }
  std::vector<uint32_t> got(n + 32, 0xbeefbeefu);
  uint32_t *g = got.data() + (64 - reinterpret_cast<uintptr_t>(got.data()) % 64) / 4 % 16;
  k.pack_b(reinterpret_cast<bf16 *>(g), x.data, ld, t, p0, kc, off, len);
  for (size_t i = 0; i < n; ++i)
    if (g[i] != want[i])
      fail_msg("widened B %c: %ld x %ld block at (%ld, %ld), ld %ld: slot %zu is %08x, want %08x", static_cast<char>(t),
               kc, len, p0, off, ld, i, g[i], want[i]);
  assert_int_equal(g[n], 0xbeefbeefu);
}

// The kernel of `family` for Ty whose panels are widened (panel_scale 2).
template <typename Ty>
const hcops::GemmKernel<Ty> *wide_kernel(const char *family) {
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (std::strcmp(f.name, family) || !hcops::family_runs_here(f)) continue;
    for (int j = 0; j < f.kernels->count; ++j)
      if (f.kernels->refs[j].serves<Ty>() && f.kernels->refs[j].get<Ty>()->panel_scale == 2)
        return f.kernels->refs[j].get<Ty>();
  }
  return nullptr;
}

// Both families carry the widened tile: avx512 as its only bf16 tile, and
// avx512_bf16 (its own copy, compiled with that family's flags) where
// vdpbf16ps is slower than the FMAs.
template <typename Ty>
void check_wide_type(const char *family, const char *name) {
  if (!runs_here(family)) {
    std::printf("SKIP: %s %s widened: this CPU does not run the family\n", family, name);
    return;
  }
  const hcops::GemmKernel<Ty> *k = wide_kernel<Ty>(family);
  if (!k) fail_msg("%s has no widened kernel for %s", family, name);
  assert_int_equal(k->mr, 32);
  for (int rep = 0; rep < 40; ++rep)
    for (Trans t : {Trans::N, Trans::T}) {
      check_wide_a<Ty>(*k, t);
      check_wide_b<Ty>(*k, t);
    }
  std::printf("%s %s: 80 A and 80 B blocks packed widened to f32\n", family, name);
}

void test_widened_panels(void **) {
  for (const char *family : {"avx512", "avx512_bf16"}) {
    check_wide_type<hcops::Bf16Gemm>(family, "bf16 -> f32");
    check_wide_type<hcops::Bf16Bf16Gemm>(family, "bf16 -> bf16");
  }
}

void test_bf16_in(void **) {
  check_type<hcops::Bf16Gemm>("avx512_bf16", "bf16 -> f32", 32, 12);
  check_type<hcops::Bf16Gemm>("avx2", "bf16 -> f32", 16, 6);
}
void test_bf16_in_bf16_out(void **) {
  check_type<hcops::Bf16Bf16Gemm>("avx512_bf16", "bf16 -> bf16", 32, 12);
  check_type<hcops::Bf16Bf16Gemm>("avx2", "bf16 -> bf16", 16, 6);
}
void test_f32_rounded(void **) { check_type<hcops::SgemmBf16>("avx512_bf16", "sgemm bf16", 32, 12); }
void test_f32_split(void **) { check_type<hcops::SgemmBf16x3>("avx512_bf16", "sgemm bf16x3", 32, 12); }

}  // namespace

int main() {
  if (!runs_here("avx512_bf16") && !runs_here("avx2")) {
    std::printf("SKIP: this CPU runs neither the avx512_bf16 nor the avx2 family: no vectorised packers to test\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_in),   cmocka_unit_test(test_bf16_in_bf16_out), cmocka_unit_test(test_f32_rounded),
      cmocka_unit_test(test_f32_split), cmocka_unit_test(test_widened_panels),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
