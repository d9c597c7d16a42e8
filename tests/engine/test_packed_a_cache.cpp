// The packed-A cache (gemm/packed_a_cache.h) on every kernel family this CPU
// runs and every datatype combination it serves: a tagged op(A) packed whole
// and read back from the cache gives C bit for bit as the untagged product
// (each family's panels, packed once for all of A, must be where a unit's own
// packing would put them: odd m, k over several k blocks, A and A^T, lda past
// the rows); it is never served stale: a write the version does not see (one
// element, one bit) and a new version both repack; the size limit declines,
// and entries idle for two rounds of the cached set make room; concurrent
// calls on one operand agree. Also the content hash itself.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/topology.h"
#include "gemm/blocking.h"
#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "gemm/packed_a_cache.h"
#include "kernels/registry.h"
#include "whole_a_check.h"

namespace {

using namespace hcops;
using whole_a_check::same_bits;
using whole_a_check::use_of;

std::mt19937 rng(20261130);

template <typename T>
std::vector<T> random_values(size_t n) {
  return whole_a_check::random_values<T>(rng, n);
}

// One family's kernel for Ty through the cache, on one shape.
template <typename Ty>
void check_shape(const GemmKernel<Ty> &kern, const char *family, Trans ta, long m, long n, long k) {
  using A = typename Ty::a_type;
  using B = typename Ty::b_type;
  using C = typename Ty::c_type;
  const long ar = ta == Trans::N ? m : k, ac = ta == Trans::N ? k : m, lda = ar + 3;
  std::vector<A> a = random_values<A>(size_t(lda * ac));
  std::vector<B> b = random_values<B>(size_t(k * n));
  std::vector<C> ref(size_t(m * n)), c(size_t(m * n));
  GemmArgs<Ty> g{ta, Trans::N, m, n, k, 1, a.data(), lda, b.data(), k, 0, ref.data(), m};
  gemm_with(g, kern, family);
  static int owner_storage;
  OperandTag tag{&owner_storage, 7};
  GemmArgs<Ty> t = g;
  t.c = c.data();
  t.a_tag = &tag;
  packed_a_cache_clear();
  // A block height that is not a multiple of the tile's rows (an mr of 24:
  // SVE at 384 bits) may start units inside a panel: declined, and right.
  if (blocking_for_product(topology(), kern, k).mc % kern.mr != 0) {
    const GemmReport r = gemm_with(t, kern, family);
    const std::string use = use_of(r);
    if (use == "packed-rows-inside-a-panel") {
      assert_true(same_bits(c, ref));
      return;
    }
    packed_a_cache_clear();
  }
  const char *what[] = {"packed-kept", "cached", "cached"};
  for (const char *want : what) {
    std::fill(c.begin(), c.end(), C(0));
    const GemmReport r = gemm_with(t, kern, family);
    if (use_of(r) != want || !same_bits(c, ref)) {
      std::printf("%s %c m=%ld n=%ld k=%ld: cache said %s (expected %s), C %s\n", family, char(ta), m, n, k,
                  use_of(r).c_str(), want, same_bits(c, ref) ? "equal" : "DIFFERS");
      fail();
    }
  }
  // A write the version does not see: one element of op(A), the last one.
  A &last = a[size_t((ac - 1) * lda + ar - 1)];
  last = A(float(last) + 0.5f);
  gemm_with(g, kern, family);  // the new reference
  GemmReport r = gemm_with(t, kern, family);
  assert_string_equal(use_of(r).c_str(), "repacked-contents-changed");
  assert_true(same_bits(c, ref));
  // Padding between columns (lda past the rows) is not op(A): no repack.
  a[size_t(ar)] = A(123.0f);
  r = gemm_with(t, kern, family);
  assert_string_equal(use_of(r).c_str(), "cached");
  assert_true(same_bits(c, ref));
  // A new version, contents unchanged: packed again all the same.
  tag.version = 8;
  r = gemm_with(t, kern, family);
  assert_string_equal(use_of(r).c_str(), "repacked-new-version");
  assert_true(same_bits(c, ref));
}

void test_every_family(void **) {
  const int checked = whole_a_check::every_family("through the cache", [](const auto &kern, const char *family) {
    // More rows than one unit takes whatever the team: units start inside the whole-matrix pack.
    const long tall = blocking_for_product(topology(), kern, 64).mc + kern.mr + 3;
    for (Trans ta : {Trans::N, Trans::T}) {
      check_shape(kern, family, ta, 67, 45, 700);  // several k blocks, odd rows
      check_shape(kern, family, ta, 2 * kern.mr + 1, 33, 37);
      check_shape(kern, family, ta, tall, 21, 64);
    }
  });
  assert_true(checked >= 2);
}

// The limit (1 MiB here): an operand larger
// than it is declined; a set of operands that fills it keeps hitting; a new
// one is declined until the others have been idle for two rounds.
void test_limit(void **) {
  const ChosenKernel<Sgemm> &ck = chosen_kernel<Sgemm>();
  const GemmKernel<Sgemm> &kern = *ck.kernel;
  testing::set_packed_a_cache_limit(1 << 20);
  assert_int_equal(long(packed_a_cache_limit()), 1L << 20);
  packed_a_cache_clear();
  const long m = 128, n = 64, k = 448;  // 224 KiB of f32 panels (more with padding)
  std::vector<std::vector<float>> as;
  for (int i = 0; i < 6; ++i) as.push_back(random_values<float>(size_t(m * k)));
  std::vector<float> b = random_values<float>(size_t(k * n)), c(size_t(m * n));
  static int owners[6];
  auto call = [&](int i) {
    OperandTag tag{&owners[i], 1};
    GemmArgs<Sgemm> g{Trans::N, Trans::N, m, n, k, 1, as[i].data(), m, b.data(), k, 0, c.data(), m};
    g.a_tag = &tag;
    return use_of(gemm_with(g, kern, ck.family->name));
  };
  int kept = 0;
  for (int i = 0; i < 6; ++i) kept += call(i) == "packed-kept";
  assert_true(kept >= 3 && kept < 6);  // some fit, not all
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < kept; ++i) assert_string_equal(call(i).c_str(), "cached");
  assert_string_equal(call(5).c_str(), "packed-cache-full");
  // Operand 5 alone for a while: the others go idle, and it gets its room.
  std::string last;
  for (int t = 0; t < 40 && last != "cached"; ++t) last = call(5);
  assert_string_equal(last.c_str(), "cached");
  // Larger than the whole limit: declined at once.
  std::vector<float> big = random_values<float>(size_t(1024 * 512));
  OperandTag tag{&owners[0], 1};
  GemmArgs<Sgemm> g{Trans::N, Trans::N, 1024, n, 512, 1, big.data(), 1024, b.data(), 512, 0, nullptr, 1024};
  std::vector<float> cbig(size_t(1024 * n));
  g.c = cbig.data();
  g.a_tag = &tag;
  assert_string_equal(use_of(gemm_with(g, kern, ck.family->name)).c_str(), "packed-cache-full");
  testing::set_packed_a_cache_limit(256 << 20);
}

// A weight written between every two calls (never read back) is not packed
// whole again while that goes on; once unchanged it is kept again.
void test_changes_every_call(void **) {
  const ChosenKernel<Sgemm> &ck = chosen_kernel<Sgemm>();
  packed_a_cache_clear();
  const long m = 96, n = 40, k = 200;
  std::vector<float> a = random_values<float>(size_t(m * k)), b = random_values<float>(size_t(k * n));
  std::vector<float> c(size_t(m * n)), ref(size_t(m * n));
  static int owner;
  OperandTag tag{&owner, 1};
  GemmArgs<Sgemm> g{Trans::N, Trans::N, m, n, k, 1, a.data(), m, b.data(), k, 0, ref.data(), m};
  GemmArgs<Sgemm> t = g;
  t.c = c.data();
  t.a_tag = &tag;
  auto step = [&](const char *want) {
    a[size_t(tag.version % (m * k))] += 1;  // the weight as the step leaves it
    gemm_with(g, *ck.kernel, ck.family->name);
    const std::string got = use_of(gemm_with(t, *ck.kernel, ck.family->name));
    assert_string_equal(got.c_str(), want);
    assert_true(same_bits(c, ref));
  };
  step("packed-kept");
  for (int i = 0; i < 3; ++i) {
    ++tag.version;
    step("packed-changes-every-call");
  }
  assert_int_equal(packed_a_cache_bytes(), 0);  // its panels freed
  // Unchanged from here on: kept again at the next call, then read.
  gemm_with(g, *ck.kernel, ck.family->name);
  assert_string_equal(use_of(gemm_with(t, *ck.kernel, ck.family->name)).c_str(), "packed-kept");
  assert_true(same_bits(c, ref));
  assert_string_equal(use_of(gemm_with(t, *ck.kernel, ck.family->name)).c_str(), "cached");
  assert_true(same_bits(c, ref));
  // Read back once, then changed: packed again as usual.
  ++tag.version;
  step("repacked-new-version");
}

// Two application threads on one tagged operand: every C right; one call
// packs and keeps it, every other call reads it or, while that one is still
// packing, packs for itself (busy). How many find it busy depends on how
// long the packing thread runs meanwhile (a loaded CPU deschedules it), so
// only the packing thread's own later calls must all read it.
void test_concurrent(void **) {
  const ChosenKernel<Sgemm> &ck = chosen_kernel<Sgemm>();
  packed_a_cache_clear();
  const long m = 96, n = 40, k = 300;
  std::vector<float> a = random_values<float>(size_t(m * k)), b = random_values<float>(size_t(k * n));
  std::vector<float> ref(size_t(m * n));
  GemmArgs<Sgemm> g{Trans::N, Trans::N, m, n, k, 1, a.data(), m, b.data(), k, 0, ref.data(), m};
  gemm_with(g, *ck.kernel, ck.family->name);
  static int owner;
  const OperandTag tag{&owner, 3};
  bool ok[2] = {true, true};
  int hits[2] = {0, 0}, busy[2] = {0, 0}, kept[2] = {0, 0}, other[2] = {0, 0};
  auto work = [&](int w) {
    std::vector<float> c(size_t(m * n));
    GemmArgs<Sgemm> t = g;
    t.c = c.data();
    t.a_tag = &tag;
    for (int i = 0; i < 200; ++i) {
      std::fill(c.begin(), c.end(), 0.0f);
      const std::string use = use_of(gemm_with(t, *ck.kernel, ck.family->name));
      hits[w] += use == "cached";
      busy[w] += use == "packed-cache-busy";
      kept[w] += use == "packed-kept";
      other[w] += use != "cached" && use != "packed-cache-busy" && use != "packed-kept";
      ok[w] = ok[w] && same_bits(c, ref);
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  std::printf("concurrent: %d + %d read, %d + %d busy, %d + %d kept\n", hits[0], hits[1], busy[0], busy[1], kept[0],
              kept[1]);
  assert_true(ok[0] && ok[1]);
  assert_int_equal(kept[0] + kept[1], 1);  // packed whole once
  assert_int_equal(other[0] + other[1], 0);
  const int packer = kept[0] ? 0 : 1;
  assert_int_equal(hits[packer], 199);  // its every later call reads the panels
}

void test_hash(void **) {
  const long rows = 37, cols = 11, ld = 40;
  std::vector<float> a = random_values<float>(size_t(ld * cols));
  const uint64_t h = matrix_hash(a.data(), sizeof(float), rows, cols, ld);
  assert_true(h == matrix_hash(a.data(), sizeof(float), rows, cols, ld));
  // Every single-bit change of every element of the matrix changes it.
  for (long j = 0; j < cols; ++j)
    for (long i = 0; i < rows; ++i)
      for (int bit = 0; bit < 32; ++bit) {
        uint32_t u;
        std::memcpy(&u, &a[size_t(i + j * ld)], 4);
        const uint32_t flipped = u ^ (1u << bit);
        std::memcpy(&a[size_t(i + j * ld)], &flipped, 4);
        assert_true(matrix_hash(a.data(), sizeof(float), rows, cols, ld) != h);
        std::memcpy(&a[size_t(i + j * ld)], &u, 4);
      }
  // Swapping two columns, or two values within one, changes it.
  std::vector<float> s = a;
  for (long i = 0; i < rows; ++i) std::swap(s[size_t(i)], s[size_t(i + ld)]);
  assert_true(matrix_hash(s.data(), sizeof(float), rows, cols, ld) != h);
  s = a;
  std::swap(s[0], s[1]);
  assert_true(matrix_hash(s.data(), sizeof(float), rows, cols, ld) != h);
  // What lies between the columns is not hashed.
  s = a;
  s[size_t(rows)] += 1;
  assert_true(matrix_hash(s.data(), sizeof(float), rows, cols, ld) == h);
  // Hashed in groups of columns on several threads: the same value.
  std::vector<float> big = random_values<float>(size_t(300 * 1000));
  const uint64_t hb = matrix_hash(big.data(), 4, 300, 1000, 300, 1);
  assert_true(hb == matrix_hash(big.data(), 4, 300, 1000, 300, 2));
  big[299999] += 1;  // the last element of the last group
  assert_true(matrix_hash(big.data(), 4, 300, 1000, 300, 2) != hb);
  // The shape enters: the same bytes as a wider, shorter matrix differ.
  std::vector<float> d = random_values<float>(64);
  assert_true(matrix_hash(d.data(), 4, 8, 8, 8) != matrix_hash(d.data(), 4, 16, 4, 16));
}

}  // namespace

int main() {
  hcops::testing::set_packed_a_cache_limit(256 << 20);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hash),
      cmocka_unit_test(test_every_family),
      cmocka_unit_test(test_limit),
      cmocka_unit_test(test_changes_every_call),
      cmocka_unit_test(test_concurrent),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
