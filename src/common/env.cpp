#include "common/env.h"

#include <stdlib.h>
#include <strings.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

extern char **environ;

namespace hcops {

const char *env_raw(const char *name) {
  const char *v = secure_getenv(name);
  return (v && *v) ? v : nullptr;
}

long env_long(const char *name, long def, long lo, long hi) {
  const char *v = env_raw(name);
  if (!v) return def;
  char *end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  while (end && *end == ' ') ++end;
  if (errno || end == v || *end || x < lo || x > hi) {
    warn_once(name, "%s=\"%s\" is not an integer in [%ld, %ld]; ignored", name, v, lo, hi);
    return def;
  }
  return x;
}

int env_choice(const char *name, const char *const *choices, int def) {
  const char *v = env_raw(name);
  if (!v) return def;
  for (int i = 0; choices[i]; ++i)
    if (strcasecmp(v, choices[i]) == 0) return i;
  std::string allowed;
  for (int i = 0; choices[i]; ++i) allowed += (i ? "|" : "") + std::string(choices[i]);
  warn_once(name, "%s=\"%s\" is not one of %s; ignored", name, v, allowed.c_str());
  return def;
}

std::string env_summary() {
  std::string out;
  for (char **e = environ; e && *e; ++e)
    if (!std::strncmp(*e, "HCOPS_", 6) || !std::strncmp(*e, "OMP_", 4) || !std::strncmp(*e, "HWLOC_XMLFILE=", 14) ||
        !std::strncmp(*e, "GOMP_", 5)) {
      out += out.empty() ? "" : " ";
      out += *e;
    }
  return out.empty() ? "(none)" : out;
}

}  // namespace hcops
