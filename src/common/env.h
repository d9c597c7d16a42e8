// Environment settings. Read with secure_getenv (a preloaded library must not
// take orders from the environment of a setuid process); a malformed value
// warns once and the default is used.
#pragma once

#include "common/api.h"
#include <string>

namespace hcops {

// The raw value, or nullptr when unset or empty.
HCOPS_API const char *env_raw(const char *name);

// An integer in [lo, hi]; unset gives `def`, anything else invalid warns once
// and gives `def`.
long env_long(const char *name, long def, long lo, long hi);

// One of `choices` (a nullptr-terminated list), compared case-insensitively;
// returns its index, or `def` (with a warning when set to something else).
int env_choice(const char *name, const char *const *choices, int def);

// "NAME=value" for every HCOPS_* / OMP_* / HWLOC_XMLFILE variable that is set.
std::string env_summary();

}  // namespace hcops
