// The two-level partition on the large machines of tests/topologies: every
// element of C is owned by exactly one thread, every domain gets work when
// there is enough, and each part requests memory on its own domain's node.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/topology.h"
#include "gemm/partition.h"

namespace {

const char *xml_files[] = {"epyc-nps4-2s.xml", "lx2-like-2cpu-8die-256core.xml", "xeon-max-flat-snc4-2s.xml"};
struct Expect {
  size_t domains;
  int cores;
} expected[] = {{8, 128}, {16, 256}, {8, 112}};

const char *topology_dir() {
  const char *dir = std::getenv("HCOPS_TOPOLOGY_DIR");
  return dir ? dir : "../../tests/topologies";
}

hcops::Topology load(const char *name) {
  std::string path = std::string(topology_dir()) + "/" + name;
  hwloc_topology_t hw;
  assert_int_equal(hwloc_topology_init(&hw), 0);
  assert_int_equal(hwloc_topology_set_xml(hw, path.c_str()), 0);
  assert_int_equal(hwloc_topology_load(hw), 0);
  return hcops::build_topology(hw, nullptr);
}

// Every (i, j) of C is covered by exactly one thread's rectangle.
void check_cover(const hcops::PartitionPlan &plan, long m, long n, int mr, int nr) {
  std::vector<unsigned char> owner(size_t(m) * n, 0);
  int threads = 0;
  for (const hcops::DomainPart &p : plan.parts) {
    assert_int_equal(p.grid_m * p.grid_n, p.threads);
    assert_int_equal(p.first_thread, threads);
    threads += p.threads;
    for (int r = 0; r < p.threads; ++r) {
      long i0, i1, j0, j1;
      hcops::tile_range(p.m1 - p.m0, p.grid_m, r % p.grid_m, mr, i0, i1);
      hcops::tile_range(p.n1 - p.n0, p.grid_n, r / p.grid_m, nr, j0, j1);
      for (long j = p.n0 + j0; j < p.n0 + j1; ++j)
        for (long i = p.m0 + i0; i < p.m0 + i1; ++i) ++owner[i + j * m];
    }
  }
  assert_int_equal(threads, plan.threads);
  for (unsigned char o : owner) assert_int_equal(o, 1);
}

void test_domains(void **) {
  for (int t = 0; t < 3; ++t) {
    hcops::Topology topo = load(xml_files[t]);
    assert_false(topo.this_system);
    assert_int_equal(topo.domains.size(), expected[t].domains);
    assert_int_equal(topo.total_cores(), expected[t].cores);
    for (const hcops::Domain &d : topo.domains) {
      assert_true(d.mem_node >= 0);
      assert_true(d.mem_kind.empty());  // packed panels go to DRAM, HBM is for libhcops_mem
      assert_true(hwloc_bitmap_isset(d.cpuset, d.cores.front()));
    }
  }
}

void test_every_domain_gets_work(void **) {
  for (int t = 0; t < 3; ++t) {
    hcops::Topology topo = load(xml_files[t]);
    const int cores = topo.total_cores();
    // A DiT Linear layer (fc1 of DiT-XL: 4608 x 512 x 1152) and a large square product.
    const long shapes[][3] = {{4608, 2048, 1152}, {8192, 8192, 8192}};
    for (const auto &s : shapes) {
      const hcops::PartitionPlan plan = hcops::plan_gemm(topo, s[0], s[1], s[2], cores, {32, 12});
      assert_int_equal(plan.parts.size(), topo.domains.size());
      assert_true(plan.split_n);
      for (const hcops::DomainPart &p : plan.parts) {
        assert_true(p.threads >= 1);
        assert_int_equal(p.mem_node, topo.domains[p.domain].mem_node);
        assert_true(p.n1 > p.n0);
      }
      check_cover(plan, s[0], s[1], 32, 12);
    }
  }
}

void test_narrow_n_splits_m(void **) {
  hcops::Topology topo = load(xml_files[0]);
  // adaLN modulation: n = batch = 8; splitting N would leave domains idle.
  const hcops::PartitionPlan plan = hcops::plan_gemm(topo, 2304, 8, 384, 16, {32, 12});
  assert_false(plan.split_n);
  assert_true(plan.parts.size() > 1);
  check_cover(plan, 2304, 8, 32, 12);
}

void test_small_work_uses_few_threads(void **) {
  hcops::Topology topo = load(xml_files[1]);
  const hcops::PartitionPlan tiny = hcops::plan_gemm(topo, 16, 16, 16, 256, {32, 12});
  assert_int_equal(tiny.threads, 1);
  check_cover(tiny, 16, 16, 32, 12);
  const hcops::PartitionPlan attn = hcops::plan_gemm(topo, 256, 256, 64, 256, {32, 12});
  assert_true(attn.threads >= 2 && attn.threads <= 8);  // 8.4 MFLOP is not worth 256 threads
  check_cover(attn, 256, 256, 32, 12);
}

// Where splitting the rows and splitting the columns of a part cost the
// same perimeter (a square part), its threads split the rows: each packs
// only its own rows of A, and the part's B panel is shared (splitting the
// columns packs all of A in every thread: 128^3 sgemm on 2 threads of a
// Zen 3 guest, TN 136 -> 147 GFLOPS).
void test_square_part_splits_rows(void **) {
  hcops::Topology topo = load(xml_files[0]);  // 8 domains
  const hcops::PartitionPlan plan = hcops::plan_gemm(topo, 576, 8 * 576, 576, 16, {32, 12});
  assert_int_equal(plan.parts.size(), 8);
  for (const hcops::DomainPart &p : plan.parts) {
    assert_int_equal(p.n1 - p.n0, p.m1 - p.m0);
    assert_int_equal(p.grid_m, 2);
    assert_int_equal(p.grid_n, 1);
  }
  check_cover(plan, 576, 8 * 576, 32, 12);
}

void test_fewer_threads_than_domains(void **) {
  for (int t = 0; t < 3; ++t) {
    hcops::Topology topo = load(xml_files[t]);
    for (int threads : {1, 2, 3, 5}) {
      const hcops::PartitionPlan plan = hcops::plan_gemm(topo, 1000, 999, 300, threads, {32, 12});
      assert_int_equal(plan.threads, threads);
      assert_int_equal(plan.parts.size(), size_t(threads));
      check_cover(plan, 1000, 999, 32, 12);
    }
  }
}

void test_odd_shapes_cover(void **) {
  hcops::Topology topo = load(xml_files[2]);
  const long shapes[][3] = {{1, 1, 1}, {1, 5000, 7}, {5000, 1, 7}, {33, 13, 1000}, {777, 555, 333}};
  for (const auto &s : shapes)
    for (int threads : {1, 7, 16, 112})
      check_cover(hcops::plan_gemm(topo, s[0], s[1], s[2], threads, {16, 12}), s[0], s[1], 16, 12);
}

// A plan of one domain (a machine of one NUMA node, or one thread on any
// machine), which plan_gemm makes on a path of its own: one part of all of
// C on that domain's node, as many threads as the work is worth, on the
// grid of least perimeter (a tie to more rows), stated here independently.
void check_one_domain(const hcops::Topology &topo, long m, long n, long k, int threads, const hcops::PlanLimits &lim) {
  const hcops::PartitionPlan plan = hcops::plan_gemm(topo, m, n, k, threads, lim);
  const long mt = (m + lim.mr - 1) / lim.mr, nt = (n + lim.nr - 1) / lim.nr;
  if (mt * nt == 0) {
    assert_int_equal(plan.threads, 0);
    assert_int_equal(plan.parts.size(), 0);
    return;
  }
  const long worth = static_cast<long>(2 * m * n * k / lim.min_flops_per_thread);
  const int t = static_cast<int>(std::max(1L, std::min({worth, mt * nt, long(threads)})));
  assert_int_equal(plan.threads, t);
  assert_int_equal(plan.parts.size(), 1);
  const hcops::DomainPart &p = plan.parts[0];
  assert_int_equal(p.domain, 0);
  assert_int_equal(p.mem_node, topo.domains[0].mem_node);
  assert_true(p.m0 == 0 && p.m1 == m && p.n0 == 0 && p.n1 == n);
  assert_int_equal(p.first_thread, 0);
  assert_int_equal(p.threads, t);
  int gm = t, gn = 1;
  long best = -1;
  for (int g = 1; g <= t; ++g)
    if (t % g == 0 && g <= mt && t / g <= nt && (best < 0 || m * (t / g) + n * g <= best)) {
      best = m * (t / g) + n * g;
      gm = g;
      gn = t / g;
    }
  assert_int_equal(p.grid_m, gm);
  assert_int_equal(p.grid_n, gn);
  check_cover(plan, m, n, lim.mr, lim.nr);
}

void test_one_domain(void **) {
  const long shapes[][3] = {{0, 5, 5},        {5, 0, 5},          {1, 1, 1},       {17, 17, 17},
                            {100, 3, 50},     {3, 100, 50},       {576, 576, 576}, {2304, 8, 384},
                            {1000, 999, 300}, {4608, 2048, 1152}, {64, 4096, 64}};
  const hcops::PlanLimits limits[] = {{32, 12, 2000000}, {16, 6, 2000000}, {8, 4, 1}};
  // One NUMA node of 2 and of 64 cores (node 3: the part must name it).
  for (int cores : {2, 64}) {
    hcops::Topology topo;
    topo.this_system = false;
    topo.domains.resize(1);
    topo.domains[0].mem_node = 3;
    for (int c = 0; c < cores; ++c) topo.domains[0].cores.push_back(c);
    for (const auto &s : shapes)
      for (const hcops::PlanLimits &lim : limits)
        for (int threads : {1, 2, 3, 4, 7, 64})
          if (threads <= cores) check_one_domain(topo, s[0], s[1], s[2], threads, lim);
  }
  // One thread on the machines of several domains.
  for (const char *xml : xml_files) {
    hcops::Topology topo = load(xml);
    for (const auto &s : shapes)
      for (const hcops::PlanLimits &lim : limits) check_one_domain(topo, s[0], s[1], s[2], 1, lim);
  }
}

}  // namespace

int main() {
  if (access(topology_dir(), R_OK) != 0) {
    std::printf("FAIL: no synthetic topologies in %s (the checkout's tests/topologies)\n", topology_dir());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_domains),
      cmocka_unit_test(test_every_domain_gets_work),
      cmocka_unit_test(test_narrow_n_splits_m),
      cmocka_unit_test(test_small_work_uses_few_threads),
      cmocka_unit_test(test_square_part_splits_rows),
      cmocka_unit_test(test_fewer_threads_than_domains),
      cmocka_unit_test(test_odd_shapes_cover),
      cmocka_unit_test(test_one_domain),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
