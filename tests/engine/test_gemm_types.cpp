// The driver's datatypes seam: one driver serves f32, f64, and bf16 inputs
// with f32 accumulation into an f32 or a bf16 C. Every bf16 combination has
// a kernel on any CPU (the generic family serves them all), which the
// engine reports and packs for; when packing memory cannot be had it still
// computes, unpacked. Either way it must be right: against an f64 product of
// the same bf16-rounded inputs, within k * 2^-24 * sum|a||b| (f32
// accumulation), and a bf16 C within one bf16 rounding of that
// (test_gemm_bf16 checks every combination in depth, on every family). Also
// the bf16 conversions themselves, and the driver's contract with a family
// that consumes k in pairs (k_align = 2, as a vdpbf16ps or AMX family will):
// a scalar reference family run through gemm_with, whose microkernels must
// only ever see an even, zero-padded k.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gemm/gemm.h"
#include "gemm/gemm_with.h"
#include "gemm/pack_policy.h"
#include "kernels/macro_kernel.h"
#include "kernels/registry.h"
#include "fail_mmap.h"


namespace {

using hcops::bf16;

void test_bf16_conversion(void **) {
  assert_int_equal(bf16(1.0f).bits, 0x3f80);
  assert_int_equal(bf16(-2.0f).bits, 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  assert_int_equal(bf16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  assert_int_equal(bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  assert_int_equal(bf16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  assert_true(std::isnan(float(bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low half must not round to Inf.
  uint32_t u = 0x7f800001u;
  float snan;
  std::memcpy(&snan, &u, sizeof snan);
  assert_true(std::isnan(float(bf16(snan))));
  assert_true(float(bf16(3.0f)) == 3.0f);
}

// `b`: how the engine must say it treated op(B), "packed" or "unpacked";
// "packed" means the family's skinny kernel (n <= 16) or shallow one (k <=
// 16) where it has them, which pack nothing.
template <typename Ty>
void check_product(hcops::Trans ta, hcops::Trans tb, long m, long n, long k, const char *b_how = "packed") {
  if (std::strcmp(b_how, "packed") == 0 && hcops::chosen_kernel<Ty>().kernel && hcops::skinny_allowed()) {
    const hcops::GemmKernel<Ty> &kern = *hcops::chosen_kernel<Ty>().kernel;
    if (kern.skinny && n <= hcops::kSkinnyMaxN) b_how = "skinny";
    else if (kern.shallow && k <= hcops::kShallowMaxK) b_how = "shallow";
  }
  using C = typename Ty::c_type;
  std::mt19937 rng(static_cast<unsigned>(m * 7 + n * 3 + k));
  std::uniform_real_distribution<float> u(-1, 1);
  const long lda = (ta == hcops::Trans::N ? m : k) + 1, ldb = (tb == hcops::Trans::N ? k : n) + 2, ldc = m + 3;
  std::vector<bf16> a(lda * (ta == hcops::Trans::N ? k : m)), b(ldb * (tb == hcops::Trans::N ? n : k));
  for (bf16 &x : a) x = bf16(u(rng));
  for (bf16 &x : b) x = bf16(u(rng));
  std::vector<C> c(ldc * n, C(std::numeric_limits<float>::quiet_NaN()));  // beta = 0 must not read C
  const float alpha = 0.5f;
  const hcops::GemmReport rep =
      hcops::gemm<Ty>({ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc});
  assert_non_null(hcops::chosen_kernel<Ty>().kernel);
  assert_string_equal(rep.family, hcops::chosen_kernel<Ty>().family->name);
  assert_string_equal(rep.b, b_how);
  auto at = [&](long i, long p) { return double(float(ta == hcops::Trans::N ? a[i + p * lda] : a[p + i * lda])); };
  auto bt = [&](long p, long j) { return double(float(tb == hcops::Trans::N ? b[p + j * ldb] : b[j + p * ldb])); };
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double want = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        want += at(i, p) * bt(p, j);
        mag += std::fabs(at(i, p) * bt(p, j));
      }
      want *= alpha;
      double bound = k * std::ldexp(1.0, -24) * alpha * mag + 1e-30;
      if (sizeof(C) == 2) bound += std::fabs(want) * std::ldexp(1.0, -8);  // one bf16 rounding of C
      const double got = double(float(c[i + j * ldc]));
      if (!(std::fabs(got - want) <= bound))
        fail_msg("C(%ld,%ld) = %.9g, want %.9g within %.3g (m=%ld n=%ld k=%ld)", i, j, got, want, bound, m, n, k);
    }
}

// Runs first: packing buffers (the workspaces', and the calling thread's
// for products of one block) are reused, so the fallback shows only on a
// call that needs more packing memory than any before it.
void test_bf16_unpacked_without_packing_memory(void **) {
  check_product<hcops::Bf16Gemm>(hcops::Trans::N, hcops::Trans::N, 2, 2, 1);  // the engine set up, small buffers
  fail_mmap = true;
  for (hcops::Trans ta : {hcops::Trans::N, hcops::Trans::T}) {
    check_product<hcops::Bf16Gemm>(ta, hcops::Trans::T, 33, 17, 65, "unpacked");
    check_product<hcops::Bf16Bf16Gemm>(ta, hcops::Trans::N, 33, 17, 65, "unpacked");
  }
  fail_mmap = false;
}

void test_bf16_inputs(void **) {
  for (const void *kernel : {static_cast<const void *>(hcops::chosen_kernel<hcops::Bf16Gemm>().kernel),
                             static_cast<const void *>(hcops::chosen_kernel<hcops::Bf16Bf16Gemm>().kernel),
                             static_cast<const void *>(hcops::chosen_kernel<hcops::SgemmBf16>().kernel),
                             static_cast<const void *>(hcops::chosen_kernel<hcops::SgemmBf16x3>().kernel)})
    assert_non_null(kernel);
  for (hcops::Trans ta : {hcops::Trans::N, hcops::Trans::T})
    for (hcops::Trans tb : {hcops::Trans::N, hcops::Trans::T}) {
      check_product<hcops::Bf16Gemm>(ta, tb, 33, 17, 65);
      check_product<hcops::Bf16Bf16Gemm>(ta, tb, 33, 17, 65);
      check_product<hcops::Bf16Gemm>(ta, tb, 1, 5, 1);
    }
}

// ---- a reference family with k_align = 2

using Ty = hcops::Bf16Gemm;
constexpr int kMr = 4, kNr = 3, kAlign = 2;
int odd_kc_seen = 0;  // microkernel calls with a k that is not a multiple of kAlign

long padded(long kc) { return (kc + kAlign - 1) / kAlign * kAlign; }

bf16 op_at(const bf16 *x, long ld, hcops::Trans t, long i, long p) {
  return t == hcops::Trans::N ? x[i + p * ld] : x[p + i * ld];
}

void ref_pack_a(bf16 *dst, const bf16 *a, long lda, hcops::Trans ta, long i0, long mc, long p0, long kc) {
  const long kcp = padded(kc);
  for (long ir = 0; ir < mc; ir += kMr, dst += kMr * kcp)
    for (long p = 0; p < kcp; ++p)
      for (int r = 0; r < kMr; ++r)
        dst[p * kMr + r] = p < kc && ir + r < mc ? op_at(a, lda, ta, i0 + ir + r, p0 + p) : bf16(0.0f);
}

void ref_pack_b(bf16 *dst, const bf16 *b, long ldb, hcops::Trans tb, long p0, long kc, long j0, long nc) {
  const long kcp = padded(kc);
  // op(B)(p, j) is B^T(j, p) read as an op(A)-style access with the transposes swapped.
  const hcops::Trans swapped = tb == hcops::Trans::N ? hcops::Trans::T : hcops::Trans::N;
  for (long jr = 0; jr < nc; jr += kNr, dst += kNr * kcp)
    for (long p = 0; p < kcp; ++p)
      for (int c = 0; c < kNr; ++c)
        dst[p * kNr + c] = p < kc && jr + c < nc ? op_at(b, ldb, swapped, j0 + jr + c, p0 + p) : bf16(0.0f);
}

void ref_edge(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, float *c, long ldc, int m, int n) {
  if (kc % kAlign) ++odd_kc_seen;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      float sum = 0;
      for (long p = 0; p < kc; p += 2)  // in pairs, as vdpbf16ps does
        sum +=
            float(a[p * kMr + i]) * float(b[p * kNr + j]) + float(a[(p + 1) * kMr + i]) * float(b[(p + 1) * kNr + j]);
      c[i + j * ldc] = alpha * sum + (beta == 0 ? 0.0f : beta * c[i + j * ldc]);
    }
}

void ref_full(long kc, float alpha, const bf16 *a, const bf16 *b, float beta, float *c, long ldc) {
  ref_edge(kc, alpha, a, b, beta, c, ldc, kMr, kNr);
}

constexpr hcops::GemmKernel<Ty> kReference = {
    .mr = kMr,
    .nr = kNr,
    .k_align = kAlign,
    .full = &ref_full,
    .edge = &ref_edge,
    .full_direct = nullptr,
    .edge_direct = nullptr,
    .pack_a = &ref_pack_a,
    .pack_b = &ref_pack_b,
    .macro = &hcops::macro_kernel<Ty>,
};

void test_family_with_k_pairs(void **) {
  odd_kc_seen = 0;
  // k = 1500 spans several k blocks with an odd last one; 7 and 1 are odd
  // single blocks; beta = 0.5 makes every k block after the first accumulate.
  const long shapes[][3] = {{37, 29, 1500}, {5, 4, 7}, {9, 11, 1}, {64, 48, 64}};
  for (const auto &s : shapes)
    for (hcops::Trans ta : {hcops::Trans::N, hcops::Trans::T})
      for (hcops::Trans tb : {hcops::Trans::N, hcops::Trans::T}) {
        const long m = s[0], n = s[1], k = s[2];
        std::mt19937 rng(static_cast<unsigned>(m + 3 * n + 7 * k));
        std::uniform_real_distribution<float> u(-1, 1);
        const long lda = (ta == hcops::Trans::N ? m : k) + 1, ldb = (tb == hcops::Trans::N ? k : n) + 1;
        std::vector<bf16> a(lda * (ta == hcops::Trans::N ? k : m)), b(ldb * (tb == hcops::Trans::N ? n : k));
        for (bf16 &x : a) x = bf16(u(rng));
        for (bf16 &x : b) x = bf16(u(rng));
        std::vector<float> c(m * n), c0(m * n);
        for (float &x : c0) x = u(rng);
        c = c0;
        const hcops::GemmReport rep = hcops::gemm_with<Ty>(
            {ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), m}, kReference, "reference-k2");
        assert_string_equal(rep.b, "packed");  // k_align > 1: never in place
        for (long j = 0; j < n; ++j)
          for (long i = 0; i < m; ++i) {
            double want = 0.5 * c0[i + j * m], mag = std::fabs(want);
            for (long p = 0; p < k; ++p) {
              const double x =
                  double(float(op_at(a.data(), lda, ta, i, p))) *
                  double(float(op_at(b.data(), ldb, tb == hcops::Trans::N ? hcops::Trans::T : hcops::Trans::N, j, p)));
              want += x;
              mag += std::fabs(x);
            }
            const double got = c[i + j * m], bound = (k + 2) * std::ldexp(1.0, -24) * mag + 1e-30;
            if (!(std::fabs(got - want) <= bound))
              fail_msg("C(%ld,%ld) = %.9g, want %.9g within %.3g (m=%ld n=%ld k=%ld)", i, j, got, want, bound, m, n, k);
          }
      }
  assert_int_equal(odd_kc_seen, 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_conversion),
      cmocka_unit_test(test_bf16_unpacked_without_packing_memory),
      cmocka_unit_test(test_bf16_inputs),
      cmocka_unit_test(test_family_with_k_pairs),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
