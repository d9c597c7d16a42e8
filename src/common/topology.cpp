#include "common/topology.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/env.h"
#include "common/fp_env.h"
#include "common/log.h"
#include "common/mem_nodes.h"

namespace hcops {

int Topology::total_cores() const {
  int n = 0;
  for (const Domain &d : domains) n += static_cast<int>(d.cores.size());
  return n;
}

// Domains are the minimal cpusets among NUMA nodes that own PUs: on a die with
// one DDR node over four HBM-backed clusters, each cluster is a domain.
static std::vector<hwloc_obj_t> minimal_nodes(hwloc_topology_t hw) {
  std::vector<hwloc_obj_t> nodes, out;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, n));)
    if (n->cpuset && !hwloc_bitmap_iszero(n->cpuset)) nodes.push_back(n);
  for (hwloc_obj_t n : nodes) {
    bool minimal = true, duplicate = false;
    for (hwloc_obj_t o : nodes)
      if (o != n && hwloc_bitmap_isincluded(o->cpuset, n->cpuset) && !hwloc_bitmap_isequal(o->cpuset, n->cpuset))
        minimal = false;
    for (hwloc_obj_t o : out)
      if (hwloc_bitmap_isequal(o->cpuset, n->cpuset)) duplicate = true;
    if (minimal && !duplicate) out.push_back(n);
  }
  return out;
}

// Packed panels go to the domain's DDR node (mem_nodes.h); HBM is left to
// the placement policies of libhcops_mem.

static std::size_t cache_size(hwloc_topology_t hw, hwloc_obj_type_t type, std::size_t def) {
  hwloc_obj_t c = hwloc_get_obj_by_type(hw, type, 0);
  return (c && c->attr && c->attr->cache.size) ? c->attr->cache.size : def;
}

static void add_domain(Topology &t, hwloc_topology_t hw, hwloc_bitmap_t cpuset) {
  Domain d;
  d.index = static_cast<int>(t.domains.size());
  d.cpuset = cpuset;
  const int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(hw, cpuset, HWLOC_OBJ_CORE);
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(hw, cpuset, HWLOC_OBJ_CORE, i);
    hwloc_bitmap_t pus = hwloc_bitmap_dup(core->cpuset);
    hwloc_bitmap_and(pus, pus, cpuset);
    if (!hwloc_bitmap_iszero(pus)) d.cores.push_back(hwloc_bitmap_first(pus));
    hwloc_bitmap_free(pus);
  }
  if (d.cores.empty()) {  // no core objects (unusual XML): count PUs instead
    for (int pu = hwloc_bitmap_first(cpuset); pu >= 0; pu = hwloc_bitmap_next(cpuset, pu)) d.cores.push_back(pu);
  }
  if (hwloc_obj_t node = ddr_node(hw, cpuset)) {
    d.mem_node = static_cast<int>(node->os_index);
    d.mem_kind = node->subtype ? node->subtype : "";
  }
  if (d.cores.empty()) {
    hwloc_bitmap_free(cpuset);
    return;
  }
  t.domains.push_back(std::move(d));
}

Topology build_topology(hwloc_topology_t hw, hwloc_const_bitmap_t restrict_to) {
  Topology t;
  t.hw = hw;
  t.this_system = hwloc_topology_is_thissystem(hw);
  const char *xml = env_raw("HWLOC_XMLFILE");
  t.source = t.this_system ? "this machine" : (xml ? xml : "synthetic");
  t.numa_nodes = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
  t.l1d = cache_size(hw, HWLOC_OBJ_L1CACHE, t.l1d);
  t.l2 = cache_size(hw, HWLOC_OBJ_L2CACHE, t.l2);
  t.l3 = cache_size(hw, HWLOC_OBJ_L3CACHE, t.l3);

  hwloc_bitmap_t covered = hwloc_bitmap_alloc();
  for (hwloc_obj_t n : minimal_nodes(hw)) {
    hwloc_bitmap_t set = hwloc_bitmap_dup(n->cpuset);
    hwloc_bitmap_andnot(set, set, covered);  // overlapping nodes: first one wins
    if (restrict_to) hwloc_bitmap_and(set, set, restrict_to);
    hwloc_bitmap_or(covered, covered, n->cpuset);
    if (hwloc_bitmap_iszero(set)) {
      hwloc_bitmap_free(set);
      continue;
    }
    add_domain(t, hw, set);
  }
  // PUs outside every NUMA node (some VMs report none) form one more domain.
  hwloc_bitmap_t rest = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(hw));
  hwloc_bitmap_andnot(rest, rest, covered);
  if (restrict_to) hwloc_bitmap_and(rest, rest, restrict_to);
  if (!hwloc_bitmap_iszero(rest)) add_domain(t, hw, rest);
  else hwloc_bitmap_free(rest);
  hwloc_bitmap_free(covered);
  return t;
}

static Topology fallback_topology() {
  Topology t;
  t.source = "fallback (hwloc failed)";
  Domain d;
  // The PUs the process may run on (taskset, a batch system's cgroup): the
  // main thread's mask (pid = its tid), not that of the thread which loads
  // the topology, a worker the caller may have pinned. PUs, not cores:
  // without a topology SMT siblings cannot be told apart. All online PUs if
  // the mask cannot be read.
  cpu_set_t allowed;
  if (sched_getaffinity(getpid(), sizeof allowed, &allowed) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &allowed)) d.cores.push_back(i);
  }
  if (d.cores.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < std::max(1L, n); ++i) d.cores.push_back(i);
  }
  t.domains.push_back(std::move(d));
  return t;
}

// Why the file HWLOC_XMLFILE names cannot be read ("" when it can: whether it
// is a topology is hwloc's to say).
static std::string unreadable(const char *path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat st;
  const bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  close(fd);
  return dir ? "a directory" : "";
}

// hwloc falls back to this machine, silently, when HWLOC_XMLFILE's file
// cannot be used; the user asked for another machine and must hear it. A
// topology from XML is not "this system" unless HWLOC_THISSYSTEM=1 says so,
// in which case a readable file is taken as used.
static void say_if_xml_unused(hwloc_topology_t hw) {
  const char *xml = env_raw("HWLOC_XMLFILE");
  if (!xml || !*xml) return;
  const std::string why = unreadable(xml);
  const char *thissystem = env_raw("HWLOC_THISSYSTEM");
  const bool asserted = thissystem && std::strcmp(thissystem, "0") != 0;
  if (why.empty() && (!hwloc_topology_is_thissystem(hw) || asserted)) return;
  warn_once("HWLOC_XMLFILE", "HWLOC_XMLFILE=%s cannot be used (%s); using this machine's topology", quoted(xml).c_str(),
            why.empty() ? "hwloc cannot read a topology from it" : why.c_str());
}

// Only what HCOps reads of the machine: PUs, cores, caches, NUMA nodes and
// their memory attributes. The load runs in the process's first GEMM (or
// large allocation), so the rest would be paid there: I/O devices and
// instruction caches (hwloc's defaults already drop them, said here so that
// no HWLOC_* default can bring them back), Misc objects, distance matrices
// and CPU kinds (cpufreq files of every CPU), and the x86 backend, which on
// Linux only adds cpuid details and to get them binds the calling thread to
// every PU in turn (one migration per PU: milliseconds on large machines).
// Where Linux hides the caches from sysfs (some containers and VMs), only the
// x86 backend finds them: load() then discovers again with it.
static void restrict_discovery(hwloc_topology_t hw, bool with_x86) {
  hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(hw, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
#if HWLOC_API_VERSION >= 0x00020100
  if (!with_x86) hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
#endif
#if HWLOC_API_VERSION >= 0x00020800
  hwloc_topology_set_flags(
      hw, hwloc_topology_get_flags(hw) | HWLOC_TOPOLOGY_FLAG_NO_DISTANCES | HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
#endif
}

// hwloc, and through it libxml2 (HWLOC_XMLFILE), runs in the caller's thread:
// its floating-point environment is kept (common/fp_env.h).
static hwloc_topology_t discover(bool with_x86) {
  hwloc_topology_t hw;
  if (hwloc_topology_init(&hw) != 0) return nullptr;
  restrict_discovery(hw, with_x86);
  if (hwloc_topology_load(hw) != 0) {
    hwloc_topology_destroy(hw);
    return nullptr;
  }
  return hw;
}

static Topology load() {
  KeepFpEnv keep;
  hwloc_topology_t hw = discover(false);
  if (hw && hwloc_topology_is_thissystem(hw) && hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_L2CACHE) <= 0) {
    hwloc_topology_destroy(hw);
    hw = discover(true);
  }
  if (!hw) {
    // hwloc with libxml2 (libhwloc-plugins) reads a file that is no topology
    // as "use this machine"; its own minimal parser (no plugins: the usual
    // case on compute nodes) fails the whole load instead. HWLOC_XMLFILE
    // then wins over any discovery the API can ask for, so this machine's
    // topology is out of reach without changing the process's environment:
    // the same warning as above, and the fallback.
    const char *xml = env_raw("HWLOC_XMLFILE");
    if (xml && *xml) {
      const std::string why = unreadable(xml);
      warn_once("HWLOC_XMLFILE", "HWLOC_XMLFILE=%s cannot be used (%s); assuming one NUMA domain of this process's CPUs",
                quoted(xml).c_str(), why.empty() ? "hwloc cannot read a topology from it" : why.c_str());
    } else {
      warn_once("topology", "hwloc could not load the topology; assuming one NUMA domain of this process's CPUs");
    }
    return fallback_topology();
  }
  say_if_xml_unused(hw);
  hwloc_bitmap_t bound = nullptr;
  if (hwloc_topology_is_thissystem(hw)) {
    bound = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(hw, bound, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(bound)) {
      hwloc_bitmap_free(bound);
      bound = nullptr;
    }
  }
  Topology t = build_topology(hw, bound);
  if (bound) hwloc_bitmap_free(bound);
  if (t.domains.empty()) {
    warn_once("topology-empty", "hwloc reported no usable cores; assuming one NUMA domain");
    return fallback_topology();
  }
  return t;
}

const Topology &topology() {
  static const Topology *t = new Topology(load());  // never destroyed: GEMM may run at exit
  return *t;
}

}  // namespace hcops
