// The avx2 family's partial vector stores (kernels/avx2/vec.h: storeu with a
// Mask), which write lanes [0, n) with whole 4, 2 and 1-lane stores rather
// than vmaskmov: for every n, at an element offset that ends the vector on
// an inaccessible page, only lanes [0, n) are written, with the vector's
// bits (NaN payloads, -0, denormals: moves, no arithmetic), and nothing
// around them; a mask that is not a prefix still writes just its lanes;
// masked loads at the same places read lanes [0, n) and zeros. Every edge
// of the family's tiles, skinny products, packers and operators ends in
// these. Skipped, and said so, on a CPU without AVX2 and FMA: the tests are
// compiled for AVX2 (a target pragma), main() is not, and checks first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <immintrin.h>  // and the C library's headers it pulls in: outside the target region

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "common/fenced.h"
#include "kernels/registry.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "kernels/avx2/vec.h"

namespace {

using hcops::kernels::avx2::F32;
using hcops::kernels::avx2::F64;

constexpr uint32_t kSentinel32 = 0x7fa5a5a5u;  // a NaN no lane holds
constexpr uint64_t kSentinel64 = 0x7ff5a5a5a5a5a5a5ull;

// Lanes with bits that arithmetic would change: a signalling NaN with a
// payload, -0, a denormal, a quiet NaN with another payload, Inf.
const uint32_t kLanes32[8] = {0x7f800001u, 0x80000000u, 0x00000003u, 0x3f800000u,
                              0xffc12345u, 0x7f800000u, 0xc0490fdbu, 0x00400000u};
const uint64_t kLanes64[4] = {0x7ff0000000000001ull, 0x8000000000000000ull, 0x0000000000000003ull,
                              0xfff8123456789abcull};

template <typename U, typename T>
U bits_of(T x) {
  U u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Elements [0, len) of `mem`, with the vector stored at `at`: lane i of
// `lanes` where written(i) and the sentinel elsewhere.
template <typename U, typename T, typename Written>
void check_memory(const T *mem, long len, long at, int lane_count, const U *lanes, U sentinel, const Written &written,
                  int n) {
  for (long i = 0; i < len; ++i) {
    const long lane = i - at;
    const bool in = lane >= 0 && lane < lane_count && written(int(lane));
    const U want = in ? lanes[lane] : sentinel, got = bits_of<U>(mem[i]);
    if (got != want)
      fail_msg("n = %d, vector at %ld: element %ld is %#llx, expected %#llx", n, at, i, (unsigned long long)got,
               (unsigned long long)want);
  }
}

// kLanes at an offset that ends lane n - 1 on the fence (and, for n < lanes,
// one that leaves room after it), stored with mask(n), then read back.
template <typename W, typename U>
void check_prefixes(const U *lanes, U sentinel) {
  constexpr int L = W::lanes;
  using T = decltype(W::reduce_add(W::zero()));
  typename W::V v;
  std::memcpy(&v, lanes, sizeof v);
  for (int n = 0; n <= L; ++n) {
    for (long room : {0L, 3L}) {
      const long len = 2 * L + room;
      FencedArray<T> mem(static_cast<size_t>(len));
      for (long i = 0; i < len; ++i) std::memcpy(&mem.data[i], &sentinel, sizeof sentinel);
      const long at = len - room - n;  // lane n - 1 the last element before `room`
      W::storeu(mem.data + at, v, W::mask(n));
      check_memory<U>(
          mem.data, len, at, L, lanes, sentinel, [&](int lane) { return lane < n; }, n);
      // Masked loads at the same place: the stored lanes, zeros past n.
      const typename W::V back = W::loadu(mem.data + at, W::mask(n));
      U got[L];
      std::memcpy(got, &back, sizeof got);
      for (int lane = 0; lane < L; ++lane)
        if (got[lane] != (lane < n ? lanes[lane] : U(0)))
          fail_msg("n = %d: masked load's lane %d is %#llx", n, lane, (unsigned long long)got[lane]);
    }
  }
}

void test_f32_prefixes(void **) { check_prefixes<F32>(kLanes32, kSentinel32); }
void test_f64_prefixes(void **) { check_prefixes<F64>(kLanes64, kSentinel64); }

// A mask that is not a prefix (none of the family's code makes one) still
// writes exactly its lanes.
void test_other_masks(void **) {
  __m256 v;
  std::memcpy(&v, kLanes32, sizeof v);
  for (int bits : {0x05, 0xa0, 0x81, 0x7e, 0x02}) {
    float mem[16];
    for (float &x : mem) std::memcpy(&x, &kSentinel32, sizeof x);
    __m256i m = _mm256_setzero_si256();
    int32_t words[8];
    for (int lane = 0; lane < 8; ++lane) words[lane] = bits >> lane & 1 ? -1 : 0;
    std::memcpy(&m, words, sizeof m);
    F32::storeu(mem + 4, v, m);
    check_memory<uint32_t>(
        mem, 16, 4, 8, kLanes32, kSentinel32, [&](int lane) { return (bits >> lane & 1) != 0; }, bits);
  }
  __m256d d;
  std::memcpy(&d, kLanes64, sizeof d);
  for (int bits : {0x5, 0xa, 0x2, 0x6}) {
    double mem[8];
    for (double &x : mem) std::memcpy(&x, &kSentinel64, sizeof x);
    int64_t words[4];
    for (int lane = 0; lane < 4; ++lane) words[lane] = bits >> lane & 1 ? -1 : 0;
    __m256i m;
    std::memcpy(&m, words, sizeof m);
    F64::storeu(mem + 2, d, m);
    check_memory<uint64_t>(
        mem, 8, 2, 4, kLanes64, kSentinel64, [&](int lane) { return (bits >> lane & 1) != 0; }, bits);
  }
}

}  // namespace
#pragma GCC pop_options

namespace {

bool avx2_runs_here() {
  for (int i = 0; i < hcops::kernel_family_count(); ++i) {
    const hcops::KernelFamily &f = hcops::kernel_families()[i];
    if (!std::strcmp(f.name, "avx2")) return hcops::family_runs_here(f);
  }
  return false;
}

}  // namespace

int main() {
  if (!avx2_runs_here()) {
    std::printf("SKIP: this CPU does not run the avx2 family (AVX2 and FMA): its partial stores are not tested\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32_prefixes),
      cmocka_unit_test(test_f64_prefixes),
      cmocka_unit_test(test_other_masks),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
