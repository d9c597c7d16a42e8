// libhcops_mem's configuration: the HCOPS_MEM_* variables (doc/environment.md),
// read once at start-up, and the summary hcops-info prints. A malformed value
// warns once and falls back; it never stops the host program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "mem/policy.h"

namespace hcops {
namespace mem {

// HCOPS_MEM_CACHE_DECAY=never: cached blocks are not released for age.
constexpr uint64_t kNeverDecay = UINT64_MAX;

struct Config {
  Policy env_policy;          // HCOPS_MEM_POLICY, empty when unset or malformed
  Rule fallback;              // "fast,thp" for every size the interposer sees
  std::size_t threshold = 0;  // HCOPS_MEM_THRESHOLD, or lowered by a rule of the policy
  std::size_t fast_limit = 0;
  bool stats = false;           // HCOPS_MEM_STATS asks for the report at exit
  std::string stats_file;       // where: a pattern (%p, %%) made absolute at start-up; empty: stderr
  std::size_t cache_limit = 0;  // bytes of freed blocks kept mapped for reuse
  uint64_t cache_decay_ns = 0;  // how long a freed block may wait for reuse; kNeverDecay
  bool explicit_threshold = false;
  int helper_core = -1;
};

// Reads HCOPS_MEM_* and makes the result the configuration in force. Called
// once, by init().
const Config &load_config();
// The configuration in force; nullptr before load_config().
const Config *config();

// The base page size.
std::size_t page_size();

// What hcops-info shows: threshold, policy, tiers, arena.
std::string describe_config();

}  // namespace mem
}  // namespace hcops
