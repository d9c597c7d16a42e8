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
  // Digits with an optional '-', nothing else: strtol alone would also take
  // leading white space (a newline too) and a '+'; out of long's range it
  // sets errno, so no value wraps into [lo, hi].
  const char *digits = v + (*v == '-');
  char *end = nullptr;
  errno = 0;
  const long x = (*digits >= '0' && *digits <= '9') ? std::strtol(v, &end, 10) : 0;
  if (!end || errno || *end || x < lo || x > hi) {
    warn_once(name, "%s=%s is not an integer in [%ld, %ld]; ignored", name, quoted(v).c_str(), lo, hi);
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
  warn_once(name, "%s=%s is not one of %s; ignored", name, quoted(v).c_str(), allowed.c_str());
  return def;
}

std::string env_summary() {
  std::string out;
  for (char **e = environ; e && *e; ++e)
    if (!std::strncmp(*e, "HCOPS_", 6) || !std::strncmp(*e, "OMP_", 4) || !std::strncmp(*e, "HWLOC_XMLFILE=", 14) ||
        !std::strncmp(*e, "GOMP_", 5)) {
      // Values escaped: a newline in one must not break the line it is on.
      const char *eq = std::strchr(*e, '=');
      out += out.empty() ? "" : " ";
      out += eq ? std::string(*e, static_cast<std::size_t>(eq + 1 - *e)) + escaped(eq + 1, 1024) : escaped(*e, 1024);
    }
  return out.empty() ? "(none)" : out;
}

}  // namespace hcops
