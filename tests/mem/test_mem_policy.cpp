// libhcops_mem's policy language and tiers, below the interposer: what
// HCOPS_MEM_POLICY and hcops_mem_push() accept, where a malformed string is
// reported (the user is told "at position N", so N must point at the culprit),
// and which nodes count as "fast" on the large machines of tests/topologies.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <numaif.h>

#include "mem/place.h"
#include "mem/policy.h"
#include "mem/tiers.h"
#include "common/topology.h"

namespace mem = hcops::mem;

namespace {

constexpr std::size_t K = 1024, M = K * K, G = M * K;

mem::Policy parse_ok(const char *text) {
  mem::Policy p;
  mem::ParseError err;
  if (!mem::parse_policy(text, p, err))
    fail_msg("\"%s\" rejected: %s at position %zu", text, err.what.c_str(), err.pos);
  return p;
}

mem::NodeSet nodes(std::initializer_list<int> list) {
  mem::NodeSet s;
  for (int n : list) s.set(n);
  return s;
}

void test_sizes(void **) {
  struct {
    const char *text;
    std::size_t value, used;
  } ok[] = {{"12", 12, 2},      {"7b", 7, 2},         {"4K", 4 * K, 2},   {"4k", 4 * K, 2},
            {"4KiB", 4 * K, 4}, {"4KB", 4 * K, 3},    {"10M", 10 * M, 3}, {"10MiB-", 10 * M, 5},
            {"3G:", 3 * G, 2},  {"2T", 2 * G * K, 2}, {"0", 0, 1}};
  for (const auto &c : ok) {
    std::size_t v = 1;
    assert_int_equal(mem::parse_size(c.text, v), c.used);
    assert_int_equal(v, c.value);
  }
  // No number, and numbers that do not fit: nothing consumed.
  for (const char *bad : {"", "M", "-1", "99999999999999999999", "17179869184G"}) {
    std::size_t v = 42;
    assert_int_equal(mem::parse_size(bad, v), 0);
  }
}

void test_valid_policies(void **) {
  mem::Policy p = parse_ok("2M-:fast,thp;64K-2M:local,base");
  assert_int_equal(p.rules.size(), 2);
  assert_true(p.rules[0].has_lo);
  assert_int_equal(p.rules[0].lo, 2 * M);
  assert_int_equal(p.rules[0].hi, SIZE_MAX);
  assert_true(p.rules[0].place == mem::Place::fast && p.rules[0].pages == mem::Pages::thp);
  assert_int_equal(p.rules[1].lo, 64 * K);
  assert_int_equal(p.rules[1].hi, 2 * M);
  assert_true(p.rules[1].place == mem::Place::local && p.rules[1].pages == mem::Pages::base);
  // The first rule holding the size wins; the upper bound is exclusive.
  assert_ptr_equal(p.match(2 * M), &p.rules[0]);
  assert_ptr_equal(p.match(2 * M - 1), &p.rules[1]);
  assert_ptr_equal(p.match(64 * K), &p.rules[1]);
  assert_null(p.match(64 * K - 1));
  assert_int_equal(p.lowest_explicit(), 64 * K);

  // Without a range a rule holds every size; words are case-insensitive;
  // the page kind defaults to thp and may come first.
  p = parse_ok("DDR");
  assert_int_equal(p.rules.size(), 1);
  assert_false(p.rules[0].has_lo);
  assert_int_equal(p.rules[0].lo, 0);
  assert_int_equal(p.rules[0].hi, SIZE_MAX);
  assert_true(p.rules[0].place == mem::Place::ddr && p.rules[0].pages == mem::Pages::thp);
  assert_int_equal(p.lowest_explicit(), SIZE_MAX);
  p = parse_ok("HugeTLB,Interleave");
  assert_true(p.rules[0].place == mem::Place::interleave && p.rules[0].pages == mem::Pages::hugetlb);
  assert_true(p.rules[0].nodes.none());  // interleave without nodes: every DDR node, chosen later

  // A range without a lower bound, binary units with "iB"/"B", a trailing ';'.
  p = parse_ok("-512KiB:system;1GB-:bind:1;");
  assert_int_equal(p.rules.size(), 2);
  assert_false(p.rules[0].has_lo);
  assert_int_equal(p.rules[0].hi, 512 * K);
  assert_true(p.rules[0].place == mem::Place::system);
  assert_int_equal(p.rules[1].lo, G);
  assert_true(p.rules[1].nodes == nodes({1}));

  // Node lists: ranges and singles; a ',' before a letter ends the list.
  p = parse_ok("bind:0-3,5");
  assert_true(p.rules[0].place == mem::Place::bind);
  assert_true(p.rules[0].nodes == nodes({0, 1, 2, 3, 5}));
  p = parse_ok("interleave:2,4-5,base");
  assert_true(p.rules[0].nodes == nodes({2, 4, 5}));
  assert_true(p.rules[0].pages == mem::Pages::base);
  p = parse_ok(" fast ; ddr ");  // blanks around rules are allowed
  assert_int_equal(p.rules.size(), 2);
}

// describe() is what hcops-info and the warnings print; it must read back as
// the same policy, and say it in canonical words.
void test_describe_round_trip(void **) {
  struct {
    const char *text, *canonical;
  } cases[] = {
      {"2M-:fast,thp;64K-2M:local,base", "2M-:fast,thp;64K-2M:local,base"},
      {"2MiB-:FAST", "2M-:fast,thp"},
      {"hugetlb,bind:0-3,5", "bind:0-3,5,hugetlb"},
      {"-1536K:interleave;system", "-1536K:interleave,thp;system"},
      {"1048576-4G:ddr,base;", "1M-4G:ddr,base"},
  };
  for (const auto &c : cases) {
    const std::string d = mem::describe(parse_ok(c.text));
    assert_string_equal(d.c_str(), c.canonical);
    assert_string_equal(mem::describe(parse_ok(d.c_str())).c_str(), c.canonical);
  }
}

// Each malformed string fails at the character a user has to change.
void test_malformed_positions(void **) {
  struct {
    const char *text;
    std::size_t pos;
    const char *what;  // a word of the message
  } cases[] = {
      {"", 0, "empty"},
      {"2M-:fast,thq", 9, "unknown word"},    // the 't' of "thq"
      {"2M:fast", 2, "'-'"},                  // a bare size is not a range
      {"4M-2M:fast", 3, "empty size range"},  // the upper bound that empties it
      {"2M-2M:fast", 3, "empty size range"},
      {"bind", 4, "node list"},  // where the ':' should be
      {"bind:", 5, "node number"},
      {"bind:3-1", 7, "ends before"},  // the bound that is below the start
      {"bind:0-,thp", 7, "node number"},
      {"bind:1024", 5, "too large"},
      {"bind:18446744073709551617", 5, "too large"},  // 2^64 + 1 must not wrap to node 1
      {"bind:0-18446744073709551618", 7, "too large"},
      {"fast,ddr", 5, "second placement"},  // the second one
      {"thp,fast,base", 9, "second page kind"},
      {"fast;;ddr", 5, "expected a placement"},
      {"fast ddr", 5, "';'"},
      {"2M-fast", 3, "':'"},
      {"99999999999999999999-:fast", 0, "too large"},
      {"fast,", 5, "expected a placement"},
  };
  for (const auto &c : cases) {
    mem::Policy p = parse_ok("ddr");
    mem::ParseError err;
    if (mem::parse_policy(c.text, p, err)) fail_msg("\"%s\" accepted", c.text);
    if (err.pos != c.pos || err.what.find(c.what) == std::string::npos)
      fail_msg("\"%s\": got \"%s\" at %zu, want \"...%s...\" at %zu", c.text, err.what.c_str(), err.pos, c.what, c.pos);
    // A failed parse leaves the previous policy as it was.
    assert_int_equal(p.rules.size(), 1);
    assert_true(p.rules[0].place == mem::Place::ddr);
  }
}

// ---- tiers on the synthetic machines ----

const char *topology_dir() {
  const char *dir = std::getenv("HCOPS_TOPOLOGY_DIR");
  return dir ? dir : "../../tests/topologies";
}

bool have_topologies() {
  if (access(topology_dir(), R_OK) == 0) return true;
  std::printf("FAIL: no synthetic topologies at %s (the checkout's tests/topologies)\n", topology_dir());
  return false;
}

hcops::Topology load_path(const std::string &path) {
  hwloc_topology_t hw;
  assert_int_equal(hwloc_topology_init(&hw), 0);
  assert_int_equal(hwloc_topology_set_xml(hw, path.c_str()), 0);
  assert_int_equal(hwloc_topology_load(hw), 0);
  return hcops::build_topology(hw, nullptr);
}

hcops::Topology load(const char *name) { return load_path(std::string(topology_dir()) + "/" + name); }

const char *subtype(const hcops::Topology &topo, int os_index) {
  hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo.hw, static_cast<unsigned>(os_index));
  assert_non_null(n);
  return n->subtype ? n->subtype : "";
}

bool local_to(const hcops::Topology &topo, int os_index, const hcops::Domain &d) {
  hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo.hw, static_cast<unsigned>(os_index));
  return n && n->cpuset && hwloc_bitmap_isincluded(d.cpuset, n->cpuset);
}

// Machines with on-package HBM: every domain's "fast" is its own HBM node,
// and its DDR node is a different, DRAM one, also local.
void check_hbm_machine(const char *xml, std::size_t domains) {
  const hcops::Topology topo = load(xml);
  const mem::Tiers t = mem::build_tiers(topo, nullptr);
  assert_int_equal(t.domains.size(), domains);
  assert_int_equal(topo.domains.size(), domains);
  assert_true(t.any_fast());
  mem::NodeSet seen;
  for (std::size_t i = 0; i < domains; ++i) {
    const mem::DomainTier &d = t.domains[i];
    if (d.fast.size() != 1) fail_msg("%s domain %zu: %zu fast nodes", xml, i, d.fast.size());
    const int fast = d.fast[0];
    assert_int_not_equal(fast, d.ddr);
    assert_string_equal(subtype(topo, fast), "HBM");
    assert_string_equal(subtype(topo, d.ddr), "");
    assert_true(local_to(topo, fast, topo.domains[i]));
    assert_true(local_to(topo, d.ddr, topo.domains[i]));
    assert_false(seen.test(fast));  // one HBM node per domain, not shared
    seen.set(fast);
    assert_true(t.ddr_nodes.test(d.ddr));
    // Each PU of the domain maps back to it.
    for (int pu = hwloc_bitmap_first(topo.domains[i].cpuset); pu >= 0;
         pu = hwloc_bitmap_next(topo.domains[i].cpuset, pu))
      assert_int_equal(t.domain_of(pu), static_cast<int>(i));
  }
  assert_true(seen == t.fast_nodes);
  assert_true((t.fast_nodes & t.ddr_nodes).none());
  assert_non_null(std::strstr(t.source.c_str(), "HBM"));
  assert_int_equal(t.domain_of(-1), 0);
  assert_int_equal(t.domain_of(1 << 20), 0);
}

void test_tiers_xeon_max(void **) {
  if (!have_topologies()) fail();
  check_hbm_machine("xeon-max-flat-snc4-2s.xml", 8);
}

void test_tiers_lx2(void **) {
  if (!have_topologies()) fail();
  check_hbm_machine("lx2-like-2cpu-8die-256core.xml", 16);
}

void test_tiers_epyc_has_none(void **) {
  if (!have_topologies()) fail();
  const hcops::Topology topo = load("epyc-nps4-2s.xml");
  const mem::Tiers t = mem::build_tiers(topo, nullptr);
  assert_int_equal(t.domains.size(), 8);
  assert_false(t.any_fast());
  for (std::size_t i = 0; i < t.domains.size(); ++i) {
    assert_true(t.domains[i].fast.empty());
    assert_int_equal(t.domains[i].ddr, topo.domains[i].mem_node);
  }
  assert_int_equal(t.ddr_nodes.count(), 8);
}

// HCOPS_MEM_FAST_NODES replaces hwloc's view: listed nodes local to a domain
// are its fast tier, the others are still fast for domains with none local.
void test_tiers_listed_nodes_override(void **) {
  if (!have_topologies()) fail();
  const hcops::Topology epyc = load("epyc-nps4-2s.xml");
  mem::Tiers t = mem::build_tiers(epyc, "0");
  assert_string_equal(t.source.c_str(), "HCOPS_MEM_FAST_NODES");
  assert_true(t.fast_nodes == nodes({0}));
  for (const mem::DomainTier &d : t.domains) assert_true(d.fast == std::vector<int>{0});

  const hcops::Topology xeon = load("xeon-max-flat-snc4-2s.xml");
  t = mem::build_tiers(xeon, "1,3");
  assert_true(t.fast_nodes == nodes({1, 3}));
  assert_true(t.domains[0].fast == std::vector<int>{1});
  assert_true(t.domains[1].fast == std::vector<int>{3});
  assert_true((t.domains[2].fast == std::vector<int>{1, 3}));
  assert_int_equal(t.domains[0].ddr, 0);
  assert_int_equal(t.domains[1].ddr, 2);
  // HBM nodes not listed are not fast: 5 is domain 2's HBM.
  assert_false(t.fast_nodes.test(5));

  // A malformed list is ignored (with a warning): hwloc's view again.
  t = mem::build_tiers(xeon, "fast please");
  assert_string_equal(t.source.c_str(), "hwloc node subtype HBM/MCDRAM");
  assert_int_equal(t.fast_nodes.count(), 8);
  // So is a list naming a node the topology lacks (the EPYC has nodes 0-7),
  // or one node twice.
  t = mem::build_tiers(epyc, "0,8");
  assert_string_equal(t.source.c_str(), "hwloc: no high-bandwidth node");
  assert_false(t.any_fast());
  t = mem::build_tiers(xeon, "1,1");
  assert_string_equal(t.source.c_str(), "hwloc node subtype HBM/MCDRAM");
  t = mem::build_tiers(epyc, "7-last");
  assert_true(t.fast_nodes == nodes({7}));
}

mem::Rule rule_of(const char *text) {
  mem::Policy p;
  mem::ParseError err;
  if (!mem::parse_policy(text, p, err) || p.rules.size() != 1) fail_msg("\"%s\" does not parse", text);
  return p.rules[0];
}

// HBM that hwloc names by subtype in some domains and only by bandwidth in
// others (firmware that reports HMAT but no memory-side cache or type):
// tests/mem/hbm-subtype-and-bandwidth.xml, a smaller Xeon Max (2 packages x
// 2 SNC domains, a 64 GiB DDR and a 16 GiB HBM node each) with the subtype
// left on the HBM of domains 1 and 2 only and a bandwidth attribute (HBM 4x
// DDR) on every node. In domain 3 the unlabelled HBM node comes first
// (node 6) and its DDR node second (7). The GEMM engine's packing node
// must be the DDR node too.
void test_tiers_subtype_and_bandwidth_mixed(void **) {
  const hcops::Topology topo = load_path(std::string(HCOPS_MEM_TEST_DIR) + "/hbm-subtype-and-bandwidth.xml");
  const mem::Tiers t = mem::build_tiers(topo, nullptr);
  assert_int_equal(t.domains.size(), 4);
  const int hbm[] = {1, 3, 5, 6}, ddr[] = {0, 2, 4, 7};
  for (int d = 0; d < 4; ++d) {
    if (t.domains[d].fast != std::vector<int>{hbm[d]} || t.domains[d].ddr != ddr[d])
      fail_msg("domain %d: %s", d, t.describe().c_str());
    // The GEMM engine packs its panels on the same DDR node (common/mem_nodes.h).
    assert_int_equal(topo.domains[d].mem_node, ddr[d]);
    // The nodes resolve() then chooses.
    mem::Target x = mem::resolve(t, d, rule_of("fast"), std::size_t(8) << 20, 0, 0);
    assert_int_equal(x.node, hbm[d]);
    assert_true(x.fast);
    x = mem::resolve(t, d, rule_of("ddr"), std::size_t(8) << 20, 0, 0);
    assert_int_equal(x.node, ddr[d]);
  }
  assert_true(t.fast_nodes == nodes({1, 3, 5, 6}));
  assert_true(t.ddr_nodes == nodes({0, 2, 4, 7}));
  // Both ways were used, whichever domain came first.
  assert_string_equal(t.source.c_str(), "hwloc node subtype and bandwidth");
}

// Where each placement sends an allocation made from every domain of a
// machine with HBM, and the fast tier's fallback to the domain's own DDR when
// HCOPS_MEM_FAST_LIMIT would be passed (this one-node machine cannot show a
// wrong node: only these synthetic ones can).
void test_resolve_xeon_max(void **) {
  if (!have_topologies()) fail();
  const hcops::Topology topo = load("xeon-max-flat-snc4-2s.xml");
  const mem::Tiers t = mem::build_tiers(topo, nullptr);
  const std::size_t MiB = std::size_t(1) << 20;
  for (int d = 0; d < static_cast<int>(t.domains.size()); ++d) {
    const int fast = t.domains[d].fast[0], ddr = t.domains[d].ddr;
    mem::Target x = mem::resolve(t, d, rule_of("fast"), 8 * MiB, 0, 0);
    assert_int_equal(x.mode, MPOL_PREFERRED);
    assert_int_equal(x.node, fast);
    assert_true(x.nodes == nodes({fast}));
    assert_true(x.fast);
    assert_false(x.fell_back);
    // Under the limit, then one byte over it.
    x = mem::resolve(t, d, rule_of("fast"), 8 * MiB, 8 * MiB, 16 * MiB);
    assert_int_equal(x.node, fast);
    x = mem::resolve(t, d, rule_of("fast"), 8 * MiB, 8 * MiB + 1, 16 * MiB);
    assert_int_equal(x.mode, MPOL_PREFERRED);  // preferred, never bind: no OOM kill
    assert_int_equal(x.node, ddr);
    assert_true(x.fell_back);
    assert_false(x.fast);
    x = mem::resolve(t, d, rule_of("ddr"), 8 * MiB, 0, 0);
    assert_int_equal(x.mode, MPOL_PREFERRED);
    assert_int_equal(x.node, ddr);
    assert_false(x.fast);
    x = mem::resolve(t, d, rule_of("local"), 8 * MiB, 0, 0);
    assert_int_equal(x.mode, MPOL_LOCAL);
  }
  mem::Target x = mem::resolve(t, 0, rule_of("interleave"), 8 * MiB, 0, 0);
  assert_int_equal(x.mode, MPOL_INTERLEAVE);
  assert_true(x.nodes == t.ddr_nodes);
  assert_int_equal(x.nodes.count(), 8);
  x = mem::resolve(t, 0, rule_of("interleave:8-11"), 8 * MiB, 0, 0);
  assert_true(x.nodes == nodes({8, 9, 10, 11}));
  x = mem::resolve(t, 3, rule_of("bind:9"), 8 * MiB, 0, 0);
  assert_int_equal(x.mode, MPOL_BIND);
  assert_int_equal(x.node, 9);
  // Out-of-range domains (a CPU outside every domain) count as domain 0.
  x = mem::resolve(t, 99, rule_of("fast"), 8 * MiB, 0, 0);
  assert_int_equal(x.node, t.domains[0].fast[0]);
}

// Without a fast tier, fast is the domain's DDR node, and that is not a
// fallback.
void test_resolve_epyc_fast_is_ddr(void **) {
  if (!have_topologies()) fail();
  const hcops::Topology topo = load("epyc-nps4-2s.xml");
  const mem::Tiers t = mem::build_tiers(topo, nullptr);
  for (int d = 0; d < static_cast<int>(t.domains.size()); ++d) {
    const mem::Target x = mem::resolve(t, d, rule_of("fast,thp"), 64 << 20, 0, 1);
    assert_int_equal(x.mode, MPOL_PREFERRED);
    assert_int_equal(x.node, t.domains[d].ddr);
    assert_false(x.fast);
    assert_false(x.fell_back);
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_valid_policies),
      cmocka_unit_test(test_describe_round_trip),
      cmocka_unit_test(test_malformed_positions),
      cmocka_unit_test(test_tiers_xeon_max),
      cmocka_unit_test(test_tiers_lx2),
      cmocka_unit_test(test_tiers_epyc_has_none),
      cmocka_unit_test(test_tiers_listed_nodes_override),
      cmocka_unit_test(test_tiers_subtype_and_bandwidth_mixed),
      cmocka_unit_test(test_resolve_xeon_max),
      cmocka_unit_test(test_resolve_epyc_fast_is_ddr),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
