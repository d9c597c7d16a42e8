#include "mem/config.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/env.h"
#include "common/log.h"
#include "mem/allocator.h"
#include "mem/arena.h"
#include "mem/stats.h"
#include "mem/tiers.h"

namespace hcops {
namespace mem {

namespace {

constexpr std::size_t kDefaultThreshold = std::size_t(1) << 20;

// Written once, under init()'s pthread_once, before the threshold lets any
// allocation in.
const Config *installed = nullptr;

// HCOPS_MEM_STATS: 0 (or unset) none, 1 stderr, a path (with a '/') a file.
// A relative path is made absolute now, so a program that changes directory
// still writes where its user meant. A directory that cannot take the file
// is said now, while stderr is still open, and the report goes to stderr.
void read_stats(Config &c) {
  const char *v = env_raw("HCOPS_MEM_STATS");
  if (!v || !*v || std::strcmp(v, "0") == 0) return;
  c.stats = true;
  if (std::strcmp(v, "1") == 0) return;
  if (!std::strchr(v, '/')) {
    c.stats = false;
    warn_once("HCOPS_MEM_STATS",
              "HCOPS_MEM_STATS=\"%s\" is not 0, 1 or a path with a '/' (e.g. ./stats.%%p); no report", v);
    return;
  }
  std::string path = v;
  if (path[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) path = std::string(cwd) + "/" + path;
  }
  // The directory as this process would expand it (a %p there is rare).
  const std::string dir = expand_stats_file(path.substr(0, path.rfind('/') + 1), static_cast<long>(getpid()));
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    warn_once("HCOPS_MEM_STATS", "HCOPS_MEM_STATS=\"%s\": cannot create files in %s (%s); the report goes to stderr", v,
              dir.c_str(), std::strerror(errno));
    return;
  }
  c.stats_file = path;
}

}  // namespace

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

const Config &load_config() {
  auto *c = new Config;
  c->fallback.place = Place::fast;
  c->fallback.pages = Pages::thp;

  std::size_t thr = kDefaultThreshold;
  if (const char *t = env_raw("HCOPS_MEM_THRESHOLD")) {
    std::size_t v = 0;
    const std::size_t n = parse_size(t, v);
    if (n && !t[n]) {
      thr = v;
      c->explicit_threshold = true;
    } else {
      warn_once("HCOPS_MEM_THRESHOLD", "HCOPS_MEM_THRESHOLD=\"%s\" is not a size (e.g. 4M); using 1M", t);
    }
  }
  if (const char *p = env_raw("HCOPS_MEM_POLICY")) {
    ParseError err;
    if (!parse_policy(p, c->env_policy, err))
      warn_once("HCOPS_MEM_POLICY", "HCOPS_MEM_POLICY=\"%s\": %s at position %zu; using the default (%s)", p,
                err.what.c_str(), err.pos + 1, describe(c->fallback).c_str());
  }
  // A rule reaching below the threshold lowers it, unless it was set.
  if (!c->explicit_threshold) thr = std::min(thr, c->env_policy.lowest_explicit());
  thr = std::max(thr, page_size());
  c->threshold = thr;
  if (const char *l = env_raw("HCOPS_MEM_FAST_LIMIT")) {
    std::size_t v = 0;
    const std::size_t n = parse_size(l, v);
    if (n && !l[n]) c->fast_limit = v;
    else warn_once("HCOPS_MEM_FAST_LIMIT", "HCOPS_MEM_FAST_LIMIT=\"%s\" is not a size; ignored", l);
  }
  read_stats(*c);
  // Training loops free and re-allocate the same tensors every step; keeping
  // freed blocks mapped spares the page faults (and huge-page zeroing) that
  // glibc spares by recycling its heap. Default: 1/8 of RAM, at most 4 GiB.
  {
    const std::size_t ram = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
    c->cache_limit = std::min(ram / 8, std::size_t(4) << 30);
    if (const char *v = env_raw("HCOPS_MEM_CACHE")) {
      std::size_t bytes = 0;
      const std::size_t n = parse_size(v, bytes);
      if (n && !v[n]) c->cache_limit = bytes;
      else
        warn_once("HCOPS_MEM_CACHE", "HCOPS_MEM_CACHE=\"%s\" is not a size (0 disables); using %s", v,
                  format_size(c->cache_limit).c_str());
    }
  }
  c->helper_core = static_cast<int>(env_long("HCOPS_MEM_HELPER_CORE", -1, -1, CPU_SETSIZE - 1));
  // Default: the last CPU of the process, read now (the constructor runs on
  // the main thread) rather than from whichever thread starts the helper.
  cpu_set_t set;
  if (c->helper_core < 0 && sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0 && c->helper_core < 0; --cpu)
      if (CPU_ISSET(cpu, &set)) c->helper_core = cpu;
  installed = c;
  return *c;
}

const Config *config() { return installed; }

std::string describe_config() {
  init();
  const Config *c = installed;
  std::string s =
      "threshold " + format_size(threshold.load()) + (c->explicit_threshold ? " (HCOPS_MEM_THRESHOLD)" : "");
  s += "\npolicy: ";
  s += c->env_policy.rules.empty() ? describe(c->fallback) + " (default)"
                                   : describe(c->env_policy) + "; otherwise " + describe(c->fallback);
  s += "\n" + tiers().describe();
  if (c->fast_limit) s += "; fast limit " + format_size(c->fast_limit) + " (HCOPS_MEM_FAST_LIMIT)";
  s += "\narena: " + (Arena::span() ? format_size(Arena::span()) + " of address space reserved" : std::string("none"));
  return s;
}

}  // namespace mem
}  // namespace hcops
