// The engine when OpenMP gives a smaller team than the plan asks for
// (OMP_THREAD_LIMIT=1 with HCOPS_NUM_THREADS=2, set by test_short_team.sh):
// the product is computed serially, right, reported as serial, and with
// one packing workspace, not a second one taken while the first is held.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <random>
#include <vector>

#include "gemm/team.h"
#include "gemm/gemm.h"
#include "gemm/workspace.h"

namespace {

void test_short_team_runs_serial_on_one_workspace(void **) {
  assert_int_equal(hcops::max_threads(), 2);  // the wrapper's HCOPS_NUM_THREADS
  const long m = 257, n = 300, k = 129;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a(m * k), b(k * n), c(m * n), want(m * n);
  for (double &x : a) x = u(rng);
  for (double &x : b) x = u(rng);
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i) {
      double s = 0;
      for (long p = 0; p < k; ++p) s += a[i + p * m] * b[p + j * k];
      want[i + j * m] = s;
    }
  for (int call = 0; call < 3; ++call) {
    for (double &x : c) x = NAN;
    const hcops::GemmReport rep = hcops::gemm<hcops::Dgemm>(
        {hcops::Trans::N, hcops::Trans::N, m, n, k, 1.0, a.data(), m, b.data(), k, 0.0, c.data(), m});
    assert_int_equal(rep.threads, 1);
    for (long i = 0; i < m * n; ++i)
      if (!(std::fabs(c[i] - want[i]) <= 1e-12 * k)) fail_msg("C[%ld] = %g, want %g", i, c[i], want[i]);
  }
  // Sequential calls reuse one workspace; the serial retry must not take a
  // second one while its own attempt still holds the first.
  assert_int_equal(hcops::workspaces_created(), 1);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_short_team_runs_serial_on_one_workspace),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
