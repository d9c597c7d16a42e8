// Lists of CPU and NUMA-node numbers, as the HCOPS_* variables that name
// CPUs or nodes take them (HCOPS_MPI_CORES, HCOPS_MEM_FAST_NODES,
// HCOPS_MEM_HELPER_CORE). One grammar and one set of checks for every
// library, documented once in doc/environment.md ("CPU and node lists"):
//
//   list  := item (',' item)*
//   item  := id | id '-' id           a range a-b, a <= b, both included
//   id    := decimal digits | "last"  last: the highest id the process may use
//
// Nothing else: no spaces, signs, empty items or trailing characters; each id
// at most once (also through overlapping ranges); every id one the process
// may use.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hcops {

// What the ids may be: `usable[i]` when the process may use id i (a CPU of
// its affinity, a node of the topology). Empty: no id is usable.
using UsableIds = std::vector<bool>;

struct IdListError {
  std::size_t pos = 0;  // 0-based offset of the character at fault
  std::string what;
};

// Parses `text` into `ids`, in the order written (ranges ascending). `kind`
// ("CPU", "node") names the ids in errors. With `single`, exactly one id.
// Returns false with `err` set on any error; `ids` is then unspecified.
bool parse_id_list(const char *text, const UsableIds &usable, const char *kind, bool single, std::vector<int> &ids,
                   IdListError &err);

// The usable ids as a list in the grammar above ("0-3,8"), "none" when empty.
std::string format_ids(const UsableIds &usable);

// The CPUs of the calling thread's affinity (sched_getaffinity).
UsableIds affinity_cpus();

// Reads `value`, the value of variable `name`, as a list (or, with
// `single`, one id) of `kind`s among `usable`. Null or empty: false,
// silently. Malformed or naming an id the process cannot use: one warning
// quoting the value escaped, ending "; <fallback>", and false.
bool id_list_setting(const char *name, const char *value, const char *kind, const UsableIds &usable, bool single,
                     const char *fallback, std::vector<int> &ids);

// id_list_setting() of the variable `name` (env_raw). The variable itself is
// left alone either way.
bool env_id_list(const char *name, const char *kind, const UsableIds &usable, bool single, const char *fallback,
                 std::vector<int> &ids);

}  // namespace hcops
