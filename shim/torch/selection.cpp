#include "shim/torch/selection.h"

#include <strings.h>

#include <cctype>

#include "common/env.h"
#include "common/log.h"

namespace hcops::torch_ops {

std::atomic<bool> enabled{true};
thread_local int8_t thread_enabled = kNoOverride;

namespace {

constexpr const char *names[] = {
#define HCOPS_TORCH_GROUP_NAME(g) #g,
    HCOPS_TORCH_OP_GROUPS(HCOPS_TORCH_GROUP_NAME)
#undef HCOPS_TORCH_GROUP_NAME
};
// "gelu, silu, ..., attention": HCOPS_OPS's error message.
#define HCOPS_TORCH_GROUP_LISTED(g) ", " #g
constexpr const char *listed = HCOPS_TORCH_OP_GROUPS(HCOPS_TORCH_GROUP_LISTED) + 2;
#undef HCOPS_TORCH_GROUP_LISTED
constexpr uint32_t all_groups = (1u << uint32_t(OpGroup::count)) - 1;

std::string trimmed(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace

const char *group_name(OpGroup g) { return names[size_t(g)]; }

uint32_t parse_selection(const char *value, std::string *error) {
  error->clear();
  if (!value) return all_groups;
  std::string v = trimmed(value);
  if (v.empty() || strcasecmp(v.c_str(), "all") == 0) return all_groups;
  if (strcasecmp(v.c_str(), "none") == 0) return 0;
  uint32_t set = 0;
  size_t start = 0;
  for (;;) {
    size_t comma = v.find(',', start);
    std::string name = trimmed(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    size_t i = 0;
    while (i < size_t(OpGroup::count) && strcasecmp(name.c_str(), names[i]) != 0) ++i;
    if (i == size_t(OpGroup::count)) {
      *error = "HCOPS_OPS=" + quoted(value) + ": " +
               (name.empty() ? std::string("an empty name") : quoted(name.c_str())) +
               " is not an operator (all, none, or a comma list of " + listed + "); using all";
      return all_groups;
    }
    set |= 1u << i;
    if (comma == std::string::npos) return set;
    start = comma + 1;
  }
}

bool group_selected(OpGroup g) {
  static const uint32_t selection = [] {
    std::string error;
    uint32_t s = parse_selection(env_raw("HCOPS_OPS"), &error);
    if (!error.empty()) warn_once("HCOPS_OPS", "%s", error.c_str());
    return s;
  }();
  return selection >> uint32_t(g) & 1;
}

}  // namespace hcops::torch_ops
