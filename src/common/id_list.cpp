#include "common/id_list.h"

#include <errno.h>
#include <sched.h>
#include <strings.h>

#include <climits>
#include <cstring>

#include "common/env.h"
#include "common/log.h"

namespace hcops {

namespace {

struct Parser {
  const char *text;
  const UsableIds &usable;
  const char *kind;
  IdListError &err;
  std::size_t pos = 0;

  bool fail_at(std::size_t at, std::string what) {
    err.pos = at;
    err.what = std::move(what);
    return false;
  }

  std::string not_usable(int id) const { return std::string(kind) + " " + std::to_string(id) + " is not usable"; }

  int last_usable() const {
    for (std::size_t i = usable.size(); i-- > 0;)
      if (usable[i]) return static_cast<int>(i);
    return -1;
  }

  // One id: digits or "last". The value saturates past INT_MAX, so no length
  // of number can wrap around onto a valid id (strtoul would take
  // 18446744073709551615 as -1 once cast to int, 4294967296 as 0).
  bool id(int &out) {
    const std::size_t start = pos;
    const char c = text[pos];
    if (c >= '0' && c <= '9') {
      unsigned long long v = 0;
      bool huge = false;
      for (; text[pos] >= '0' && text[pos] <= '9'; ++pos) {
        v = v * 10 + static_cast<unsigned>(text[pos] - '0');
        if (v > INT_MAX) huge = true, v = INT_MAX;  // saturates: never wraps back into range
      }
      if (huge) return fail_at(start, std::string("number too large for a ") + kind);
      if (v >= usable.size() || !usable[v]) return fail_at(start, not_usable(static_cast<int>(v)));
      out = static_cast<int>(v);
      return true;
    }
    if (strncasecmp(text + pos, "last", 4) == 0) {
      pos += 4;
      out = last_usable();
      if (out < 0) return fail_at(start, std::string("no ") + kind + " is usable for \"last\"");
      return true;
    }
    if (c == '-') return fail_at(start, "negative number");
    if (c == ',' || c == '\0') return fail_at(start, std::string("empty item (expected a ") + kind + " number)");
    return fail_at(start, std::string("unexpected character (expected a ") + kind + " number or \"last\")");
  }

  bool list(bool single, std::vector<int> &ids) {
    std::vector<bool> seen(usable.size());
    for (;;) {
      const std::size_t start = pos;
      int a = 0, b = 0;
      if (!id(a)) return false;
      b = a;
      if (text[pos] == '-') {
        if (single) return fail_at(pos, std::string("a range where one ") + kind + " is expected");
        const std::size_t upper = ++pos;
        if (!id(b)) return false;
        if (b < a) return fail_at(upper, "range ends before it starts");
      }
      for (int i = a; i <= b; ++i) {
        // A range over a hole of the usable set names an unusable id too.
        if (!usable[i]) return fail_at(start, not_usable(i));
        if (seen[i]) return fail_at(start, std::string(kind) + " " + std::to_string(i) + " named twice");
        seen[i] = true;
        ids.push_back(i);
      }
      if (text[pos] == '\0') return true;
      if (text[pos] != ',') return fail_at(pos, "unexpected character");
      if (single) return fail_at(pos, std::string("a list where one ") + kind + " is expected");
      ++pos;
    }
  }
};

}  // namespace

bool parse_id_list(const char *text, const UsableIds &usable, const char *kind, bool single, std::vector<int> &ids,
                   IdListError &err) {
  ids.clear();
  Parser p{text, usable, kind, err};
  return p.list(single, ids);
}

std::string format_ids(const UsableIds &usable) {
  std::string s;
  for (std::size_t i = 0; i < usable.size(); ++i) {
    if (!usable[i]) continue;
    std::size_t j = i;
    while (j + 1 < usable.size() && usable[j + 1]) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(i);
    if (j > i) s += "-" + std::to_string(j);
    i = j;
  }
  return s.empty() ? "none" : s;
}

UsableIds affinity_cpus() {
  // A set as large as the kernel's: sched_getaffinity fails (EINVAL) on a
  // set smaller than its CPU ids, beyond cpu_set_t's 1024 on large machines.
  UsableIds cpus;
  for (int n = CPU_SETSIZE; n <= (1 << 22); n *= 2) {
    cpu_set_t *set = CPU_ALLOC(n);
    if (!set) return cpus;
    const std::size_t bytes = CPU_ALLOC_SIZE(n);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      cpus.resize(n);
      for (int c = 0; c < n; ++c) cpus[c] = CPU_ISSET_S(c, bytes, set);
      CPU_FREE(set);
      return cpus;
    }
    const bool too_small = errno == EINVAL;
    CPU_FREE(set);
    if (!too_small) return cpus;
  }
  return cpus;
}

bool id_list_setting(const char *name, const char *value, const char *kind, const UsableIds &usable, bool single,
                     const char *fallback, std::vector<int> &ids) {
  if (!value || !*value) return false;
  IdListError err;
  if (parse_id_list(value, usable, kind, single, ids, err)) return true;
  ids.clear();
  warn_once(name, "%s=%s: %s at position %zu (%s %ss this process may use, %s; see doc/environment.md); %s", name,
            quoted(value).c_str(), err.what.c_str(), err.pos + 1, single ? "one of the" : "a list of the", kind,
            format_ids(usable).c_str(), fallback);
  return false;
}

bool env_id_list(const char *name, const char *kind, const UsableIds &usable, bool single, const char *fallback,
                 std::vector<int> &ids) {
  return id_list_setting(name, env_raw(name), kind, usable, single, fallback, ids);
}

}  // namespace hcops
