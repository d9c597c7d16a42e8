// When the amx family may run (common/cpu_features.cpp): only when the CPU
// has AMX-TILE, XCR0 enables the tile state, and Linux grants the process
// the tile data. Linux is asked (arch_prctl(ARCH_REQ_XCOMP_PERM)) only when
// the first two hold: never on a CPU without AMX; and only when asked
// (tile_state_granted), never by detection, an f32 GEMM's kernel choice or
// the operators' family. And what this machine says agrees with its cpuid,
// XCR0 and Linux.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include "common/cpu_features.h"
#include "gemm/gemm.h"
#include "kernels/registry.h"
#include "ops/family.h"

namespace {

int asked = 0;
bool grant() {
  ++asked;
  return true;
}
bool refuse() {
  ++asked;
  return false;
}

void test_decision(void **) {
  asked = 0;
  assert_false(hcops::amx_usable(false, false, &grant));
  assert_false(hcops::amx_usable(false, true, &grant));  // no AMX in the CPU: never ask
  assert_false(hcops::amx_usable(true, false, &grant));  // the OS does not save tiles: never ask
  assert_int_equal(asked, 0);
  assert_true(hcops::amx_usable(true, true, &grant));
  assert_int_equal(asked, 1);
  assert_false(hcops::amx_usable(true, true, &refuse));  // refused: the next family serves
  assert_int_equal(asked, 2);
}

// This machine: the CPU's own cpuid and XCR0, and what Linux says now.
void test_this_machine(void **) {
  unsigned a, b, c, d;
  __cpuid_count(7, 0, a, b, c, d);
  const bool cpu_tiles = d & (1u << 24), cpu_bf16 = d & (1u << 22);
  __get_cpuid(1, &a, &b, &c, &d);
  unsigned xlo = 0, xhi = 0;
  if (c & (1u << 27)) __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  const bool os_tiles = (xlo & 0x60000) == 0x60000;
  const hcops::CpuFeatures &f = hcops::cpu_features();
  std::printf("cpuid amx_tile=%d amx_bf16=%d, XCR0 tiles=%d; detected: %s\n", cpu_tiles, cpu_bf16, os_tiles,
              f.describe().c_str());
  assert_int_equal(f.amx_tile, cpu_tiles && os_tiles);
  assert_int_equal(f.amx_bf16, cpu_tiles && cpu_bf16 && os_tiles);
  unsigned long permitted = 0;
  const bool can_ask = syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &permitted) == 0;
  const bool granted_before = can_ask && (permitted & (1ul << 18));
  // Detection and the f32 path never ask: an f32 GEMM's kernel choice and
  // the operators' family leave the permission as it was.
  (void)hcops::chosen_kernel<hcops::Sgemm>();
  (void)hcops::chosen_kernel<hcops::Dgemm>();
  (void)hcops::ops::ops_table();
  permitted = 0;
  if (can_ask) {
    assert_int_equal(syscall(SYS_arch_prctl, 0x1022, &permitted), 0);
    assert_int_equal(bool(permitted & (1ul << 18)), granted_before);
  }
  if (!cpu_tiles || !os_tiles) {
    assert_false(hcops::tile_state_granted());
    assert_false(hcops::tile_state_refused());
    assert_false(hcops::features_usable(hcops::kAmxTile));
    assert_int_equal(f.mask() & (hcops::kAmxTile | hcops::kAmxBf16), 0);
    return;
  }
  // A CPU with AMX: asking now; AMX counts exactly when it is then granted.
  const bool granted = hcops::tile_state_granted();
  assert_int_equal(syscall(SYS_arch_prctl, 0x1022, &permitted), 0);
  assert_int_equal(granted, bool(permitted & (1ul << 18)));
  assert_int_equal(hcops::tile_state_refused(), !granted);
  assert_int_equal(hcops::features_usable(hcops::kAmxTile | hcops::kAmxBf16), granted);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decision),
      cmocka_unit_test(test_this_machine),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
