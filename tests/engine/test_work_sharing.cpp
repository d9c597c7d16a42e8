// The GEMM engine's work sharing (gemm.cpp's run_part) with threads that run
// late, as on a CPU shared with other processes: a thread held up (through
// the engine's unit hook) gets its work done by the others, and C is the
// same, bit for bit, whichever thread computed which unit; right against an
// f64 reference. test_work_sharing.sh runs this with 2 threads and with more
// threads than cores, under OMP_WAIT_POLICY active, passive and unset, and
// on a synthetic NUMA machine, where the threads of a finished domain take
// the units of a late one. Then the operators' loop (common/work_share.h,
// which the PyTorch layer's split() runs them on): every piece once, a
// held-up thread's share done by the others, and softmax and LayerNorm
// (forward, and backward with its per-block parameter gradients summed in
// block order, as shim/torch/layer_norm.cpp does) the same bits as serial.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "gemm/team.h"
#include "common/topology.h"
#include "common/work_share.h"
#include "gemm/gemm.h"
#include "ops/layer_norm.h"
#include "ops/softmax.h"

namespace {

constexpr int kMaxThreads = 64, kMaxParts = 64;

enum class Delay { none, first_unit_of_thread1, random, first_unit_of_upper_half };
std::atomic<Delay> g_delay{Delay::none};
std::atomic<int> g_team{1};
std::atomic<long> g_units[kMaxThreads][kMaxParts];
std::atomic<bool> g_delayed[kMaxThreads];

// How long a thread is held up: long enough for the others to run the
// rest of the work meanwhile; under QEMU's emulation (make check-aarch64,
// HCOPS_TEST_EMULATED) a unit takes ten times longer or more.
useconds_t hold_us() {
  static const useconds_t us = [] {
    const char *e = std::getenv("HCOPS_TEST_EMULATED");
    return e && std::strcmp(e, "yes") == 0 ? 5000000u : 300000u;
  }();
  return us;
}

void hook(int thread, int part) {
  if (thread < kMaxThreads && part < kMaxParts) g_units[thread][part].fetch_add(1);
  switch (g_delay.load()) {
    case Delay::none: break;
    case Delay::first_unit_of_thread1:
      if (thread == 1 && !g_delayed[thread].exchange(true)) usleep(hold_us());
      break;
    case Delay::first_unit_of_upper_half:
      if (thread >= g_team.load() / 2 && !g_delayed[thread].exchange(true)) usleep(hold_us());
      break;
    case Delay::random: {
      thread_local std::mt19937 rng(1234u + unsigned(thread));
      usleep(rng() % 300);
      break;
    }
  }
}

void reset_counts() {
  for (auto &row : g_units)
    for (auto &u : row) u.store(0);
  for (auto &d : g_delayed) d.store(false);
}

long units_of(int thread) {
  long s = 0;
  for (auto &u : g_units[thread]) s += u.load();
  return s;
}

long total_units() {
  long s = 0;
  for (int t = 0; t < kMaxThreads; ++t) s += units_of(t);
  return s;
}

template <typename T>
T from_double(double x) {
  return T(float(x));
}
template <>
double from_double<double>(double x) {
  return x;
}

template <typename T>
double dbl(T x) {
  return double(x);
}
double dbl(hcops::bf16 x) { return double(float(x)); }

template <typename Ty>
struct Product {
  using A = typename Ty::a_type;
  using C = typename Ty::c_type;
  long m, n, k;
  hcops::Trans ta, tb;
  std::vector<A> a;
  std::vector<typename Ty::b_type> b;
  std::vector<C> c0;
  double alpha = 0.75, beta = -0.5;

  Product(long m_, long n_, long k_, hcops::Trans ta_, hcops::Trans tb_, unsigned seed)
      : m(m_), n(n_), k(k_), ta(ta_), tb(tb_), a(m_ * k_), b(k_ * n_), c0(m_ * n_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto &x : a) x = from_double<A>(u(rng));
    for (auto &x : b) x = from_double<typename Ty::b_type>(u(rng));
    for (auto &x : c0) x = from_double<C>(u(rng));
  }
  long lda() const { return ta == hcops::Trans::N ? m : k; }
  long ldb() const { return tb == hcops::Trans::N ? k : n; }
  double at(long i, long p) const { return dbl(ta == hcops::Trans::N ? a[i + p * m] : a[p + i * k]); }
  double bt(long p, long j) const { return dbl(tb == hcops::Trans::N ? b[p + j * k] : b[j + p * n]); }

  std::vector<C> run(hcops::GemmReport *rep = nullptr) const {
    std::vector<C> c = c0;
    const hcops::GemmReport r = hcops::gemm<Ty>({ta, tb, m, n, k, typename Ty::acc_type(alpha), a.data(), lda(),
                                                 b.data(), ldb(), typename Ty::acc_type(beta), c.data(), m});
    if (rep) *rep = r;
    return c;
  }

  // Against the f64 product; tol relative to the sum of |terms|.
  void check(const std::vector<C> &c, double tol) const {
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < m; ++i) {
        double s = 0, mag = 0;
        for (long p = 0; p < k; ++p) {
          s += at(i, p) * bt(p, j);
          mag += std::fabs(at(i, p) * bt(p, j));
        }
        const double want = alpha * s + beta * dbl(c0[i + j * m]);
        const double got = dbl(c[i + j * m]);
        if (!(std::fabs(got - want) <= tol * (std::fabs(alpha) * mag + std::fabs(beta * dbl(c0[i + j * m])) + 1)))
          fail_msg("C(%ld, %ld) = %.9g, want %.9g (m %ld n %ld k %ld)", i, j, got, want, m, n, k);
      }
  }
};

template <typename C>
void assert_same_bits(const std::vector<C> &x, const std::vector<C> &y, const char *what) {
  assert_int_equal(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(C)) != 0)
      fail_msg("%s: element %zu differs: %.9g against %.9g", what, i, dbl(x[i]), dbl(y[i]));
}

// The late thread does one unit at most; thread 0 (and any others) the rest.
void test_late_thread_is_covered(void **) {
  const int team = hcops::max_threads();
  if (team < 2) skip();
  g_team = team;
  Product<hcops::Sgemm> p(512, 512, 384, hcops::Trans::N, hcops::Trans::T, 1);
  g_delay = Delay::none;
  reset_counts();
  const auto quiet = p.run();
  const long units = total_units();
  g_delay = Delay::first_unit_of_thread1;
  reset_counts();
  hcops::GemmReport rep;
  const auto late = p.run(&rep);
  assert_int_equal(rep.threads, team);
  assert_int_equal(total_units(), units);
  std::printf("# %ld units: thread 1 (held up %u ms) ran %ld, the others %ld\n", units, hold_us() / 1000, units_of(1),
              units - units_of(1));
  // One phase (k = 384 <= KC, n = 512 <= NC for every family): a late
  // thread 1 holds the one unit it took, if any.
  assert_true(units_of(1) <= 1);
  assert_true(units >= 2L * team);
  if (!g_delayed[1].load()) std::printf("# thread 1 ran no unit: the delay was not exercised\n");
  assert_same_bits(quiet, late, "thread 1 late");
  p.check(late, 1e-5);
  g_delay = Delay::none;
}

// Random delays on every unit: the same bits as undelayed, shapes with
// several column and k blocks, edge tiles, both transpositions, f32, f64
// and bf16 (f32 C, and bf16 C, rounded once from the f32 sum).
template <typename Ty>
void random_delays(double tol) {
  std::mt19937 rng(42);
  const long dims[] = {1, 7, 33, 130, 257, 700, 1100};
  for (int trial = 0; trial < 10; ++trial) {
    const long m = dims[rng() % 7], n = dims[rng() % 7], k = trial % 3 == 0 ? 2100 : dims[rng() % 7];
    const auto ta = rng() % 2 ? hcops::Trans::T : hcops::Trans::N, tb = rng() % 2 ? hcops::Trans::T : hcops::Trans::N;
    Product<Ty> p(m, n, k, ta, tb, 100 + trial);
    g_delay = Delay::none;
    const auto quiet = p.run();
    g_delay = Delay::random;
    const auto late = p.run();
    g_delay = Delay::none;
    char what[96];
    std::snprintf(what, sizeof what, "%ld x %ld x %ld, random delays", m, n, k);
    assert_same_bits(quiet, late, what);
    p.check(late, tol);
  }
}

void test_random_delays_f32(void **) { random_delays<hcops::Sgemm>(1e-5); }
void test_random_delays_f64(void **) { random_delays<hcops::Dgemm>(1e-13); }
void test_random_delays_bf16(void **) { random_delays<hcops::Bf16Gemm>(1e-5); }
void test_random_delays_bf16_c(void **) { random_delays<hcops::Bf16Bf16Gemm>(1.0 / 128); }

// On a machine of several domains (HWLOC_XMLFILE), the upper half of the
// team (the upper domains: threads are numbered domain by domain) held up:
// the lower domains' threads, done with their own parts, take theirs.
void test_finished_domain_helps(void **) {
  const int team = hcops::max_threads();
  const int domains = static_cast<int>(hcops::topology().domains.size());
  if (domains < 2 || team < 2 || team > kMaxThreads) skip();
  g_team = team;
  Product<hcops::Sgemm> p(600, 2048, 256, hcops::Trans::N, hcops::Trans::N, 5);
  g_delay = Delay::none;
  reset_counts();
  hcops::GemmReport rep;
  const auto quiet = p.run(&rep);
  if (rep.domains < 2) skip();
  int parts = 0;
  for (int t = 0; t < kMaxThreads; ++t)
    for (int q = 0; q < kMaxParts; ++q)
      if (g_units[t][q].load()) parts = std::max(parts, q + 1);
  g_delay = Delay::first_unit_of_upper_half;
  reset_counts();
  const auto late = p.run();
  long stolen = 0;
  for (int t = 0; t < team / 2; ++t)
    for (int q = (parts + 1) / 2; q < parts; ++q) stolen += g_units[t][q].load();
  std::printf("# %d parts over %d threads: the lower half ran %ld units of the upper parts\n", parts, team, stolen);
  assert_true(stolen > 0);
  assert_same_bits(quiet, late, "upper domains late");
  p.check(late, 1e-5);
  g_delay = Delay::none;
}

// The loop's pieces: each runs once; the thread held up on its first piece
// runs no other.
void test_loop_covers_a_late_thread(void **) {
  const int team = hcops::max_threads();
  if (team < 2) skip();
  const long count = 64;
  std::vector<std::atomic<int>> runs(count);
  std::vector<int> by(count, -1);
  std::atomic<bool> held{false};
  const int used = hcops::share_dynamically(count, team, [&](long i) {
    const int t = omp_get_thread_num();
    if (t == 1 && !held.exchange(true)) usleep(hold_us());
    else usleep(1000);  // long enough that every thread gets a piece
    runs[i].fetch_add(1);
    by[i] = t;
  });
  assert_int_equal(used, team);
  long late = 0;
  for (long i = 0; i < count; ++i) {
    assert_int_equal(runs[i].load(), 1);
    late += by[i] == 1;
  }
  std::printf("# %ld pieces: thread 1 (held up %u ms) ran %ld\n", count, hold_us() / 1000, late);
  // A thread 1 that never ran before the pieces ran out leaves nothing to
  // test: said, not failed (7 threads on 2 busy cores can get there).
  if (!held.load()) std::printf("# thread 1 ran no piece: the delay was not exercised\n");
  assert_true(late <= 1);
}

// Each thread's own part first: with a team of T, thread t starts on the
// t-th of T equal runs of the pieces and takes them front to back; pieces
// of its run that other threads took are its back end, taken back to
// front. Whatever the timing (checked on the order of the claims, not on
// how many each thread got).
void test_loop_keeps_each_threads_part(void **) {
  const int team = hcops::max_threads();
  if (team < 2) skip();
  const long count = 61;
  std::vector<int> by(count, -1);
  std::vector<long> seq(count, -1);
  std::atomic<long> clock{0};
  const int used = hcops::share_dynamically(count, team, [&](long i) {
    seq[i] = clock.fetch_add(1);
    by[i] = omp_get_thread_num();
    usleep(200);
  });
  for (long i = 0; i < count; ++i) assert_true(by[i] >= 0);
  if (used != team) {  // a team cut by contention (common/contention.h): its runs are not checked
    std::printf("# %d of %d threads took part: the runs' order is not checked\n", used, team);
    return;
  }
  for (int t = 0; t < team; ++t) {
    const long begin = count * t / team, end = count * (t + 1) / team;
    long i = begin;
    for (; i < end && by[i] == t; ++i)
      if (i > begin) assert_true(seq[i] > seq[i - 1]);  // the owner, front to back
    for (long j = i; j < end; ++j) {
      assert_true(by[j] != t);  // the rest: others', back to front (one other thread: in its order)
      if (j > i && team == 2) assert_true(seq[j] < seq[j - 1]);
    }
  }
}

// A loop of more pieces than a run can number is claimed in groups of
// consecutive pieces: each piece still once, whatever the grouping.
void test_loop_longer_than_its_claims(void **) {
  for (const long most : {1L, 2L, 7L, 60L, 61L}) {
    const long count = 61;
    std::vector<std::atomic<int>> runs(count);
    for (auto &r : runs) r.store(0);
    hcops::share_dynamically(
        count, hcops::max_threads(), [&](long i) { runs[size_t(i)].fetch_add(1); }, most);
    for (long i = 0; i < count; ++i) assert_int_equal(runs[size_t(i)].load(), 1);
  }
}

// Softmax and LayerNorm rows shared with random delays: the bits of the
// serial computation.
void test_operators_under_delays(void **) {
  const int team = hcops::max_threads();
  const long rows = 301, cols = 1000;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0, 3);
  std::vector<float> x(rows * cols), dy(rows * cols), gamma(cols), beta(cols);
  for (float &v : x) v = nd(rng);
  for (float &v : dy) v = nd(rng);
  for (float &v : gamma) v = nd(rng);
  for (float &v : beta) v = nd(rng);
  auto delayed = [](long b, long e, auto &&f) {
    thread_local std::mt19937 r(77u + unsigned(omp_get_thread_num()));
    usleep(r() % 500);
    f(b, e);
  };
  // Softmax.
  std::vector<float> want(rows * cols), got(rows * cols);
  hcops::ops::softmax_forward(x.data(), want.data(), rows, cols, false);
  hcops::share_range(rows, 8, team, [&](long b, long e) {
    delayed(b, e, [&](long b0, long e0) {
      hcops::ops::softmax_forward(x.data() + b0 * cols, got.data() + b0 * cols, e0 - b0, cols, false);
    });
  });
  assert_same_bits(want, got, "softmax rows under delays");
  // LayerNorm forward.
  std::vector<float> mean(rows), rstd(rows), mean2(rows), rstd2(rows);
  hcops::ops::layer_norm_forward(x.data(), gamma.data(), beta.data(), want.data(), mean.data(), rstd.data(), rows,
                                 cols, 1e-5f);
  hcops::share_range(rows, 8, team, [&](long b, long e) {
    delayed(b, e, [&](long b0, long e0) {
      hcops::ops::layer_norm_forward(x.data() + b0 * cols, gamma.data(), beta.data(), got.data() + b0 * cols,
                                     mean2.data() + b0, rstd2.data() + b0, e0 - b0, cols, 1e-5f);
    });
  });
  assert_same_bits(want, got, "layer_norm rows under delays");
  assert_same_bits(mean, mean2, "layer_norm mean under delays");
  // LayerNorm backward: blocks of rows with their own parameter-gradient
  // accumulators, summed in block order afterwards.
  const long blocks = 4L * team;
  auto backward = [&](bool shared, std::vector<float> &dx, std::vector<float> &dg) {
    std::vector<float> acc(blocks * cols, 0.0f);
    auto block = [&](long blk) {
      const long r0 = rows * blk / blocks, r1 = rows * (blk + 1) / blocks;
      hcops::ops::layer_norm_backward(dy.data() + r0 * cols, x.data() + r0 * cols, mean.data() + r0, rstd.data() + r0,
                                      gamma.data(), dx.data() + r0 * cols, acc.data() + blk * cols, nullptr, r1 - r0,
                                      cols);
    };
    if (shared)
      hcops::share_dynamically(blocks, team, [&](long blk) { delayed(blk, blk + 1, [&](long b0, long) { block(b0); }); });
    else
      for (long blk = 0; blk < blocks; ++blk) block(blk);
    dg.assign(cols, 0.0f);
    for (long blk = 0; blk < blocks; ++blk)
      for (long j = 0; j < cols; ++j) dg[j] += acc[blk * cols + j];
  };
  std::vector<float> dx1(rows * cols), dx2(rows * cols), dg1, dg2;
  backward(false, dx1, dg1);
  backward(true, dx2, dg2);
  assert_same_bits(dx1, dx2, "layer_norm dx under delays");
  assert_same_bits(dg1, dg2, "layer_norm dgamma under delays");
}

}  // namespace

int main() {
  hcops::testing::set_unit_hook(hook);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_late_thread_is_covered),   cmocka_unit_test(test_random_delays_f32),
      cmocka_unit_test(test_random_delays_f64),        cmocka_unit_test(test_random_delays_bf16),
      cmocka_unit_test(test_random_delays_bf16_c),     cmocka_unit_test(test_finished_domain_helps),
      cmocka_unit_test(test_loop_covers_a_late_thread), cmocka_unit_test(test_operators_under_delays),
      cmocka_unit_test(test_loop_keeps_each_threads_part), cmocka_unit_test(test_loop_longer_than_its_claims),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
