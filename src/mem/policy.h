// Placement policies of libhcops_mem: which NUMA nodes and which page kind a
// large allocation gets, by size range. The text form is the one of
// HCOPS_MEM_POLICY and of hcops_mem_push():
//
//   policy := rule (';' rule)*
//   rule   := [range ':'] item (',' item)*
//   range  := [size] '-' [size]          lower bound inclusive, upper exclusive
//   size   := digits [K|M|G|T] [B|iB]    binary units
//   item   := fast | ddr | local | system | interleave [':' nodes] | bind ':' nodes
//           | thp | hugetlb | base
//   nodes  := n ['-' n] (',' n ['-' n])*
//
// e.g. "2M-:fast,thp;64K-2M:local,base". The first rule whose range holds the
// size wins. A rule without a range holds every size the interposer sees; a
// range without a lower bound starts at the threshold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/nodemask.h"

namespace hcops {
namespace mem {

using hcops::kMaxNodes;
using hcops::NodeSet;

enum class Place : uint8_t {
  system,      // leave it to glibc
  fast,        // high-bandwidth nodes local to the calling thread, DDR when full
  ddr,         // the DDR node local to the calling thread
  local,       // the node of the CPU that first touches each page
  interleave,  // round robin over `nodes` (default: every DDR node)
  bind,        // only `nodes`; the kernel's OOM handling applies
};
enum class Pages : uint8_t { thp, hugetlb, base };

struct Rule {
  std::size_t lo = 0, hi = SIZE_MAX;  // [lo, hi)
  bool has_lo = false;
  Place place = Place::fast;
  Pages pages = Pages::thp;
  NodeSet nodes;
};

struct Policy {
  std::vector<Rule> rules;
  // The first rule holding `size`, or nullptr.
  const Rule *match(std::size_t size) const;
  // The smallest explicit lower bound, or SIZE_MAX when no rule has one.
  std::size_t lowest_explicit() const;
};

struct ParseError {
  std::size_t pos = 0;  // offset of the offending character in the text
  std::string what;
};

// Parses `text`; on failure leaves `out` untouched and fills `err`.
bool parse_policy(const char *text, Policy &out, ParseError &err);

// "10M", "1.5G"-free exact sizes: digits with an optional binary suffix.
// Returns the number of characters consumed, 0 when there is no number.
std::size_t parse_size(const char *text, std::size_t &value);

const char *place_name(Place p);
const char *pages_name(Pages p);
std::string format_size(std::size_t bytes);
std::string describe(const Rule &r);
std::string describe(const Policy &p);

}  // namespace mem
}  // namespace hcops
