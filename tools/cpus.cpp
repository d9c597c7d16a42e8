// hcops-cpus: the CPU arithmetic of hcops-run, on the library's own list
// grammar (common/id_list.h) and topology (common/topology.h, hwloc; it
// follows HWLOC_XMLFILE), so that the launcher and the libraries read CPU
// lists and group CPUs into cores one way.
//
//   hcops-cpus [--cpus LIST] [--share INDEX COUNT]
//
// Prints, one "key value" a line:
//   cpuset LIST   the CPUs to split: LIST, else this process's affinity
//   node LIST     every CPU of the topology (hcops-run's guess of who
//                 shares the node compares the set with it)
//   cores N       the cores holding CPUs of the set
// and with --share (rank INDEX of COUNT given the same set):
//   bind LIST     its equal run of whole cores in the topology's order (the
//                 later ranks one more when COUNT does not divide; more ranks
//                 than cores share cores), or the whole set when COUNT is 1
//   share N       the cores of that run
// A LIST that is not a CPU list, or names a CPU the topology lacks: one
// line "hcops: hcops-run: --cpus ..." on stderr, exit 2.
#include <hwloc.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/id_list.h"
#include "common/topology.h"

namespace {

using Cores = std::vector<std::vector<int>>;  // each core's CPUs, in order

// The value as it was given, on one line: unprintable bytes as '?', at most
// 64 characters.
std::string shown(const char *value) {
  std::string s;
  for (const char *c = value; *c && s.size() < 64; ++c) s += std::isprint(static_cast<unsigned char>(*c)) ? *c : '?';
  return s;
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: hcops-cpus [--cpus LIST] [--share INDEX COUNT]\n");
  std::exit(2);
}

long number(const char *s) {
  char *end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > 1 << 20) usage();
  return v;
}

std::string list_of(const std::vector<int> &cpus) {
  hcops::UsableIds set;
  for (int c : cpus) {
    if (static_cast<std::size_t>(c) >= set.size()) set.resize(c + 1);
    set[c] = true;
  }
  return hcops::format_ids(set);
}

// The topology's CPUs, and its cores with the CPUs of `in` they hold. A
// topology without core objects has one core per CPU; without hwloc, each
// CPU is a core and the machine's are those the kernel lists online.
void cores_of(const hcops::UsableIds &in, std::vector<int> &node, Cores &cores) {
  hwloc_topology_t hw = hcops::topology().hw;
  if (!hw) {
    // The machine's CPUs as the kernel lists them online; failing that,
    // the process's own.
    std::vector<int> online;
    hcops::IdListError err;
    char text[4096] = "";
    if (FILE *f = std::fopen("/sys/devices/system/cpu/online", "r")) {
      if (!std::fgets(text, sizeof text, f)) text[0] = '\0';
      std::fclose(f);
    }
    text[std::strcspn(text, "\n")] = '\0';
    if (hcops::parse_id_list(text, hcops::UsableIds(1 << 20, true), "CPU", false, online, err)) {
      node = online;
    } else {
      const hcops::UsableIds mine = hcops::affinity_cpus();
      for (std::size_t c = 0; c < mine.size(); ++c)
        if (mine[c]) node.push_back(static_cast<int>(c));
    }
    for (std::size_t c = 0; c < in.size(); ++c)
      if (in[c]) cores.push_back({static_cast<int>(c)});
    return;
  }
  const int npus = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
  for (int i = 0; i < npus; ++i) node.push_back(static_cast<int>(hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, i)->os_index));
  const hwloc_obj_type_t unit = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  const int nunits = hwloc_get_nbobjs_by_type(hw, unit);
  for (int i = 0; i < nunits; ++i) {
    hwloc_obj_t u = hwloc_get_obj_by_type(hw, unit, i);
    std::vector<int> cpus;
    unsigned pu;
    hwloc_bitmap_foreach_begin(pu, u->cpuset) {
      if (pu < in.size() && in[pu]) cpus.push_back(static_cast<int>(pu));
    }
    hwloc_bitmap_foreach_end();
    if (!cpus.empty()) cores.push_back(cpus);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const char *cpus_arg = nullptr;
  long index = 0, count = 1;
  bool share = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cpus") && i + 1 < argc) {
      cpus_arg = argv[++i];
    } else if (!std::strcmp(argv[i], "--share") && i + 2 < argc) {
      index = number(argv[++i]);
      count = number(argv[++i]);
      share = true;
      if (count < 1 || index >= count) usage();
    } else {
      usage();
    }
  }
  hcops::UsableIds set;
  std::vector<int> node;
  Cores cores;
  if (cpus_arg) {
    // The grammar first, over any CPU number hwloc could have (the topology
    // may be another machine's: HWLOC_XMLFILE); then the topology's CPUs.
    std::vector<int> ids;
    hcops::IdListError err;
    // Numbers only: "last" (the highest CPU the process may use) means
    // nothing for a list of another machine's CPUs.
    if (!hcops::parse_id_list(cpus_arg, hcops::UsableIds(1 << 20, true), "CPU", false, ids, err) ||
        strcasestr(cpus_arg, "last")) {
      std::fprintf(stderr,
                   "hcops: hcops-run: --cpus \"%s\" is not a CPU list (numbers and ranges a-b, a <= b, e.g. 0-3,8; "
                   "each CPU once)\n",
                   shown(cpus_arg).c_str());
      return 2;
    }
    for (int c : ids) {
      if (static_cast<std::size_t>(c) >= set.size()) set.resize(c + 1);
      set[c] = true;
    }
    cores_of(set, node, cores);
    hcops::UsableIds known;
    for (int c : node) {
      if (static_cast<std::size_t>(c) >= known.size()) known.resize(c + 1);
      known[c] = true;
    }
    for (int c : ids)
      if (static_cast<std::size_t>(c) >= known.size() || !known[c]) {
        std::fprintf(stderr, "hcops: hcops-run: --cpus \"%s\": CPU %d is not one of the topology's (%s)\n",
                     shown(cpus_arg).c_str(), c, hcops::format_ids(known).c_str());
        return 2;
      }
  } else {
    set = hcops::affinity_cpus();
    cores_of(set, node, cores);
  }
  std::printf("cpuset %s\nnode %s\ncores %zu\n", hcops::format_ids(set).c_str(), list_of(node).c_str(), cores.size());
  if (share) {
    // Equal runs of whole cores for the ranks that share the set (the later
    // ranks one more when they do not divide); more ranks than cores share.
    const long n = static_cast<long>(cores.size());
    long first = 0, last = n - 1;
    if (count > 1 && n >= 1) {
      if (n >= count) first = index * n / count, last = (index + 1) * n / count - 1;
      else first = last = index % n;
    }
    std::vector<int> bind;
    for (long c = first; c <= last && c < n; ++c) bind.insert(bind.end(), cores[c].begin(), cores[c].end());
    std::printf("bind %s\nshare %ld\n", list_of(bind).c_str(), n ? last - first + 1 : 0);
  }
  return 0;
}
