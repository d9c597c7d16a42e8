// The engine on a synthetic large machine (HWLOC_XMLFILE, set by
// numa_gemm.sh): results are right although the 100+ cores and their NUMA
// nodes do not exist here, every domain packs its panels with memory requested
// on its own node, and binding is never attempted on a machine that is not this one.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

#include "common/cpu_features.h"
#include "gemm/team.h"
#include "common/topology.h"
#include "gemm/gemm.h"
#include "gemm/numa_buffer.h"
#include "gemm/partition.h"
#include "kernels/registry.h"

namespace {

template <typename T>
void check_gemm(hcops::Trans ta, hcops::Trans tb, long m, long n, long k) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  std::uniform_real_distribution<double> u(-1, 1);
  const long lda = (ta == hcops::Trans::N ? m : k) + 3, ldb = (tb == hcops::Trans::N ? k : n) + 1, ldc = m + 2;
  std::vector<T> a(lda * (ta == hcops::Trans::N ? k : m)), b(ldb * (tb == hcops::Trans::N ? n : k)), c(ldc * n);
  for (T &x : a) x = T(u(rng));
  for (T &x : b) x = T(u(rng));
  for (T &x : c) x = NAN;  // beta = 0 must overwrite, padding must stay NaN
  using Ty = std::conditional_t<std::is_same_v<T, float>, hcops::Sgemm, hcops::Dgemm>;
  const hcops::GemmReport rep =
      hcops::gemm<Ty>({ta, tb, m, n, k, T(0.5), a.data(), lda, b.data(), ldb, T(0), c.data(), ldc});
  assert_true(rep.threads >= 1 && rep.threads <= hcops::max_threads());
  for (long j = 0; j < n; ++j) {
    for (long i = 0; i < m; ++i) {
      double ref = 0, mag = 0;
      for (long p = 0; p < k; ++p) {
        const double x = ta == hcops::Trans::N ? a[i + p * lda] : a[p + i * lda];
        const double y = tb == hcops::Trans::N ? b[p + j * ldb] : b[j + p * ldb];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      const double tol = 4.0 * k * std::numeric_limits<T>::epsilon() * 0.5 * mag + 1e-30;
      if (!(std::fabs(c[i + j * ldc] - 0.5 * ref) <= tol))
        fail_msg("C(%ld,%ld) = %g, expected %g (m=%ld n=%ld k=%ld)", i, j, double(c[i + j * ldc]), 0.5 * ref, m, n, k);
    }
    for (long i = m; i < ldc; ++i) assert_true(std::isnan(c[i + j * ldc]));
  }
}

void test_topology_is_synthetic(void **) {
  const hcops::Topology &topo = hcops::topology();
  assert_false(topo.this_system);
  assert_true(topo.domains.size() >= 8);
  assert_true(topo.total_cores() >= 100);
}

void test_results_and_placement(void **) {
  const hcops::Topology &topo = hcops::topology();
  const int threads = hcops::max_threads();
  assert_int_equal(threads, static_cast<int>(topo.domains.size()));  // numa_gemm.sh asks one per domain
  const auto &kern = *hcops::chosen_kernel<hcops::Sgemm>().kernel;
  const long m = 300, n = 64L * kern.nr * threads / 4, k = 200;
  const hcops::PartitionPlan plan = hcops::plan_gemm(topo, m, n, k, threads, {kern.mr, kern.nr});
  assert_int_equal(plan.parts.size(), topo.domains.size());

  hcops::numa_reset_counters();
  check_gemm<float>(hcops::Trans::N, hcops::Trans::N, m, n, k);
  std::set<int> nodes;
  for (const hcops::Domain &d : topo.domains) nodes.insert(d.mem_node);
  for (int node : nodes) {
    if (hcops::numa_requests(node) == 0) fail_msg("no packing memory requested on NUMA node %d", node);
  }
  assert_int_equal(hcops::numa_bindings_applied(), 0);
}

void test_all_transposes_and_types(void **) {
  using hcops::Trans;
  for (Trans ta : {Trans::N, Trans::T})
    for (Trans tb : {Trans::N, Trans::T}) {
      check_gemm<float>(ta, tb, 257, 1000, 129);
      check_gemm<double>(ta, tb, 130, 777, 65);
      check_gemm<float>(ta, tb, 2000, 8, 96);  // narrow N: split along M
    }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topology_is_synthetic),
      cmocka_unit_test(test_results_and_placement),
      cmocka_unit_test(test_all_transposes_and_types),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
