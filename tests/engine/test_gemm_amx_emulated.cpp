// The amx kernel family on any CPU with AVX-512 (BF16): its code
// (kernels/amx/gemm_family.h: packing, tile configuration, the blocked
// loops, edges, alpha/beta, the bf16 rounding of C) instantiated on tiles
// emulated in software (kernels/amx/tiles_emulated.h) and run through the
// driver (gemm_with), for every bf16 datatype combination (tile_check.h).
// First the emulation itself against the SDM's definitions, so that a
// family right on the emulation is right on the hardware.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tile_check.h"
#include "amx_emulated_family.h"
#include "common/cpu_features.h"
#include "gemm/gemm_with.h"
#include "kernels/amx/tiles_emulated.h"

namespace {

using hcops::bf16;
using hcops::kernels::amx::EmulatedTiles;
using hcops::kernels::amx::TileConfig;

uint16_t bits(float x) { return bf16(x).bits; }

// One TDPBF16PS on small tiles, with strides wider than the rows and bytes
// past each row that must not be read or written: dst (3 x 2 f32) +=
// src1 (3 rows x 3 pairs) . src2 (3 pair rows x 2 columns x 2).
void test_emulated_dpbf16ps(void **) {
  TileConfig cfg{};
  cfg.palette_id = 1;
  cfg.rows[0] = 3, cfg.colsb[0] = 8;   // dst
  cfg.rows[1] = 3, cfg.colsb[1] = 12;  // src1
  cfg.rows[2] = 3, cfg.colsb[2] = 8;   // src2
  EmulatedTiles::configure(cfg);
  uint16_t s1[3][10], s2[3][8];  // strides 20 and 16 bytes
  float d[3][5];                 // stride 20 bytes
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 10; ++c) s1[r][c] = bits(c < 6 ? float(r + 1) * 0.5f + c : 1e30f);  // 1e30: never read
    for (int c = 0; c < 8; ++c) s2[r][c] = bits(c < 4 ? float(c - r) : 1e30f);
    for (int c = 0; c < 5; ++c) d[r][c] = c < 2 ? float(10 * r + c) : -7.0f;
  }
  // A denormal bf16 input counts as zero (DAZ), even against a large one.
  s1[2][5] = 0x0001;
  s2[2][1] = bits(std::ldexp(1.0f, 120));
  s2[2][3] = bits(std::ldexp(1.0f, 120));
  EmulatedTiles::load<0>(d, 20);
  EmulatedTiles::load<1>(s1, 20);
  EmulatedTiles::load<2>(s2, 16);
  EmulatedTiles::dpbf16ps<0, 1, 2>();
  float out[4][5];
  for (auto &row : out)
    for (float &x : row) x = -9.0f;
  EmulatedTiles::store<0>(out, 20);
  EmulatedTiles::release();
  auto f = [](uint16_t h) {
    if ((h & 0x7f80) == 0) return 0.0f;
    const uint32_t u = uint32_t(h) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    return x;
  };
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 2; ++n) {
      float want = d[m][n];
      for (int k = 0; k < 3; ++k)
        for (int e = 0; e < 2; ++e) want += f(s1[m][2 * k + e]) * f(s2[k][2 * n + e]);
      assert_float_equal(out[m][n], want, 0.0f);
    }
  for (int m = 0; m < 4; ++m)
    for (int n = 0; n < 5; ++n)
      if (m == 3 || n >= 2) assert_float_equal(out[m][n], -9.0f, 0.0f);  // past rows / colsb: untouched
}

// What the hardware would fault on, the emulation aborts on.
template <typename F>
void expect_fault(F f) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    f();
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

void test_emulated_faults(void **) {
  expect_fault([] {  // palette 2 does not exist
    TileConfig cfg = hcops::kernels::amx::uniform_config(16, 64);
    cfg.palette_id = 2;
    EmulatedTiles::configure(cfg);
  });
  expect_fault([] { EmulatedTiles::configure(hcops::kernels::amx::uniform_config(17, 64)); });   // > 16 rows
  expect_fault([] { EmulatedTiles::configure(hcops::kernels::amx::uniform_config(16, 128)); });  // > 64 bytes
  expect_fault([] {  // a tile load with no configuration
    static float x[256];
    EmulatedTiles::release();
    EmulatedTiles::load<0>(x, 64);
  });
  expect_fault([] {  // src1's pairs per row are not src2's rows
    TileConfig cfg = hcops::kernels::amx::uniform_config(16, 64);
    cfg.rows[2] = 8;
    EmulatedTiles::configure(cfg);
    EmulatedTiles::dpbf16ps<0, 1, 2>();
  });
  expect_fault([] {  // dst and src2 widths differ
    TileConfig cfg = hcops::kernels::amx::uniform_config(16, 64);
    cfg.colsb[0] = 32;
    EmulatedTiles::configure(cfg);
    EmulatedTiles::dpbf16ps<0, 1, 2>();
  });
}

template <typename Ty>
void check_family(const hcops::GemmKernel<Ty> &kern) {
  const long before = amx_emulated::dpbf16ps_executed();
  tile_check::check_all<Ty>(
      kern, [&](const hcops::GemmArgs<Ty> &g) { return hcops::gemm_with<Ty>(g, kern, "amx-emulated"); },
      "amx-emulated");
  assert_true(amx_emulated::dpbf16ps_executed() > before);  // the tiles did the work
}

void test_bf16_f32_c(void **) { check_family(amx_emulated::bf16_f32); }
void test_bf16_bf16_c(void **) { check_family(amx_emulated::bf16_bf16); }
void test_f32_as_bf16(void **) { check_family(amx_emulated::f32_as_bf16); }
void test_f32_as_bf16x3(void **) { check_family(amx_emulated::f32_as_bf16x3); }

}  // namespace

int main() {
  // The family's packing and epilogues are AVX-512 code, whatever the tiles.
  const uint64_t needs =
      hcops::kAvx512f | hcops::kAvx512dq | hcops::kAvx512bw | hcops::kAvx512vl | hcops::kAvx512Bf16 | hcops::kFma;
  const hcops::CpuFeatures &f = hcops::cpu_features();
  if ((f.mask() & needs) != needs) {
    std::printf("SKIP: test_gemm_amx_emulated: the amx family's AVX-512 code needs %s; this CPU has %s\n",
                hcops::feature_names(needs & ~f.mask()).c_str(), f.describe().c_str());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_emulated_dpbf16ps), cmocka_unit_test(test_emulated_faults),
      cmocka_unit_test(test_bf16_f32_c),        cmocka_unit_test(test_bf16_bf16_c),
      cmocka_unit_test(test_f32_as_bf16),       cmocka_unit_test(test_f32_as_bf16x3),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
