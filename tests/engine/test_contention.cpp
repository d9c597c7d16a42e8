// The team fitted to the cores the process gets (common/contention.h): the
// decision itself, then the engine on more threads than the machine has
// cores (test_contention.sh asks for 3 per core), where the GEMM regions
// measure about one core per core and the team shrinks to them (regions
// too short to be timed as well, once one of them runs long); the
// OpenMP runtime's team with it (fit_runtime_team), given back to a size
// the caller sets itself. Under HCOPS_ADAPT_THREADS=0 (the script's third
// run) the team stays as asked. With as many threads as cores (its last
// run), regions that count few cores for their own imbalance, with nothing
// taking the cores, leave the team whole.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/contention.h"
#include "common/work_share.h"
#include "gemm/team.h"
#include "gemm/gemm.h"

namespace {

bool adapting() {
  const char *v = std::getenv("HCOPS_ADAPT_THREADS");
  return !(v && std::strcmp(v, "0") == 0);
}

void test_choose_team(void **) {
  assert_int_equal(hcops::choose_team(2, -1, 0), 2);       // nothing measured yet
  assert_int_equal(hcops::choose_team(2, 1950, 0), 2);     // quiet
  assert_int_equal(hcops::choose_team(2, 1500, 0), 2);     // team - 0.5: still full
  assert_int_equal(hcops::choose_team(2, 1499, 0), 1);
  assert_int_equal(hcops::choose_team(2, 110, 0), 1);      // never below one
  assert_int_equal(hcops::choose_team(2, 1100, hcops::kProbeNs), 2);  // time to try the full team
  assert_int_equal(hcops::choose_team(8, 7600, 0), 8);
  assert_int_equal(hcops::choose_team(8, 6000, 0), 8);     // 8 - max(0.5, 8 / 4): imbalance, not lost cores
  assert_int_equal(hcops::choose_team(8, 5999, 0), 6);
  assert_int_equal(hcops::choose_team(8, 5400, 0), 5);
  assert_int_equal(hcops::choose_team(64, 48000, 0), 64);
  assert_int_equal(hcops::choose_team(64, 40000, 0), 40);
  assert_int_equal(hcops::choose_team(1, 100, 0), 1);
}

// GEMMs of a few milliseconds each, long enough to be measured.
void some_products(int calls) {
  const long n = 700;
  std::vector<double> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double &x : a) x = u(rng);
  for (double &x : b) x = u(rng);
  for (int i = 0; i < calls; ++i)
    hcops::gemm<hcops::Dgemm>(
        {hcops::Trans::N, hcops::Trans::N, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n});
}

void test_team_fits_the_cores(void **) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int asked = hcops::allowed_threads();
  std::printf("# %d threads asked on %ld cores\n", asked, cores);
  if (asked <= cores) skip();
  some_products(40);
  const int team = hcops::max_threads();
  char note[200];
  const char *why = hcops::contention_note(asked, note, sizeof note);
  std::printf("# team now %d (%s)\n", team, why ? why : "no reduction");
  if (!adapting()) {
    assert_int_equal(team, asked);
    assert_null(why);
    return;
  }
  // A probe may be due (the full team, every kProbeNs): the settled team
  // is what the measurements say.
  assert_true(hcops::settled_team(asked) <= cores);
  assert_non_null(why);
  assert_true(std::strstr(hcops::thread_policy(), "cores") != nullptr);
  assert_int_equal(hcops::allowed_threads(), asked);
}

// Products so small that their regions skip the threads' CPU times
// (RegionTimer's expect_short) still see the lost cores: such a region
// that runs long makes the next ones measure. The products are just under
// what the team must have to be timed (kShortRegionFlopsPerThread a thread:
// 345^3 on 6 threads, about a millisecond on 2 cores); with 3 threads per
// core their regions wait for threads that are not running, and many last
// the 2 ms a region needs to be counted.
void test_short_regions_see_contention(void **) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int asked = hcops::allowed_threads();
  if (asked <= cores) skip();
  const long n = static_cast<long>(0.95 * std::cbrt(hcops::kShortRegionFlopsPerThread * 0.5 * asked));
  std::vector<double> a(n * n, 0.5), b(n * n, 0.25), c(n * n);
  const auto t0 = std::chrono::steady_clock::now();
  int calls = 0;
  char note[200];
  const char *why = nullptr;
  // Until lost cores are seen, for at most 60 s (1-16 s on 2 cores);
  // 2 s where the team must stay whole. (How far the team is cut, and how
  // fast, depends on how many of these regions last long enough to count:
  // the test of long products below checks the cut.)
  const auto limit = std::chrono::seconds(adapting() ? 60 : 2);
  while (std::chrono::steady_clock::now() - t0 < limit) {
    for (int i = 0; i < 20; ++i, ++calls)
      hcops::gemm<hcops::Dgemm>(
          {hcops::Trans::N, hcops::Trans::N, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n});
    if ((why = hcops::contention_note(asked, note, sizeof note))) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("# short products: %d calls in %.2f s, team %d (%s)\n", calls, seconds, hcops::settled_team(asked),
              why ? why : "no reduction");
  assert_true(c[0] == 0.125 * n);
  if (!adapting()) {
    assert_null(why);
    return;
  }
  assert_non_null(why);
}

void test_runtime_team_follows(void **) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int asked = omp_get_max_threads();
  if (asked <= cores || std::getenv("HCOPS_NUM_THREADS")) skip();
  some_products(40);
  hcops::fit_runtime_team();
  if (!adapting()) {
    assert_int_equal(omp_get_max_threads(), asked);
    return;
  }
  assert_true(omp_get_max_threads() <= cores);
  assert_int_equal(hcops::allowed_threads(), asked);  // the engine still knows the caller's size
  // The caller sets its own size: it is theirs from then on, fitted in turn
  // (a size equal to the fitted one cannot be told from it, and is not).
  const int fitted = omp_get_max_threads();
  const int own = fitted == asked - 1 ? asked - 2 : asked - 1;
  omp_set_num_threads(own);
  hcops::fit_runtime_team();
  assert_int_equal(hcops::allowed_threads(), own);
  assert_true(omp_get_max_threads() <= cores);
}

// A team that had its cores but counts few of them (one thread waits,
// asleep, for most of each region: imbalance) is not cut: nothing takes
// the process's cores (no involuntary context switches to speak of). Run
// by the script with as many threads as cores.
void test_imbalance_is_not_contention(void **) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int asked = hcops::allowed_threads();
  if (asked != cores || asked < 2 || !adapting()) skip();
  // The premise is a machine where nothing else runs: a process preempted
  // as often as contention.h counts as contended cannot test it.
  rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < 30; ++r)  // regions of ~4 ms measured at about 1 core of `asked`
    hcops::share_dynamically(asked, asked, [](long i) {
      if (i == 0) {
        const int64_t t0 = hcops::thread_cpu_ns();
        while (hcops::thread_cpu_ns() - t0 < 4000000) {
        }
      } else {
        usleep(1000);
      }
    });
  getrusage(RUSAGE_SELF, &after);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long preempted = after.ru_nivcsw - before.ru_nivcsw;
  char note[200];
  const char *why = hcops::contention_note(asked, note, sizeof note);
  std::printf("# after imbalanced regions: team %d of %d (%s); %ld involuntary switches\n",
              hcops::settled_team(asked), asked, why ? why : "no reduction", preempted);
  if (preempted >= hcops::kContendedRate * std::max(seconds, 0.1)) {
    std::printf("# SKIP: other work preempted this process %ld times: not a quiet machine\n", preempted);
    skip();
  }
  assert_null(why);
  assert_int_equal(hcops::settled_team(asked), asked);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_choose_team),
      cmocka_unit_test(test_short_regions_see_contention),
      cmocka_unit_test(test_team_fits_the_cores),
      cmocka_unit_test(test_runtime_team_follows),
      cmocka_unit_test(test_imbalance_is_not_contention),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
