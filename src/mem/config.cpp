#include "mem/config.h"

#include <errno.h>
#include <unistd.h>
#include <strings.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/env.h"
#include "common/id_list.h"
#include "common/log.h"
#include "mem/allocator.h"
#include "mem/arena.h"
#include "mem/kernel_pages.h"
#include "mem/stats.h"
#include "mem/tiers.h"

namespace hcops {
namespace mem {

namespace {

constexpr std::size_t kDefaultThreshold = std::size_t(1) << 20;
// jemalloc's default dirty-page decay: long enough for a training step's
// blocks to wait for the next step, short enough that memory a program has
// stopped using goes back to the system soon after.
constexpr uint64_t kDefaultDecayNs = 10000000000ull;

// HCOPS_MEM_CACHE_DECAY: "never", or seconds as digits with an optional
// fraction of up to 9 digits ("10", "0.5"), at most 10^9. Written by hand:
// strtod would follow the host program's locale.
bool parse_decay(const char *text, uint64_t &ns) {
  if (!strcasecmp(text, "never")) {
    ns = kNeverDecay;
    return true;
  }
  uint64_t sec = 0, frac = 0, scale = 1000000000u;
  const char *c = text;
  for (; *c >= '0' && *c <= '9'; ++c)
    if ((sec = sec * 10 + static_cast<uint64_t>(*c - '0')) > 1000000000u) return false;
  const bool whole = c != text;
  if (*c == '.') {
    const char *f = ++c;
    for (; *c >= '0' && *c <= '9'; ++c) {
      if (c - f == 9) return false;
      scale /= 10;
      frac += static_cast<uint64_t>(*c - '0') * scale;
    }
    if (c == f && !whole) return false;
  } else if (!whole) {
    return false;
  }
  if (*c) return false;
  ns = sec * 1000000000u + frac;
  return true;
}

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
    warn_once("HCOPS_MEM_STATS", "HCOPS_MEM_STATS=%s is not 0, 1 or a path with a '/' (e.g. ./stats.%%p); no report",
              quoted(v).c_str());
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
    warn_once("HCOPS_MEM_STATS", "HCOPS_MEM_STATS=%s: cannot create files in %s (%s); the report goes to stderr",
              quoted(v).c_str(), quoted(dir.c_str()).c_str(), std::strerror(errno));
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
      warn_once("HCOPS_MEM_THRESHOLD", "HCOPS_MEM_THRESHOLD=%s is not a size (e.g. 4M); using 1M", quoted(t).c_str());
    }
  }
  if (const char *p = env_raw("HCOPS_MEM_POLICY")) {
    ParseError err;
    if (!parse_policy(p, c->env_policy, err))
      warn_once("HCOPS_MEM_POLICY", "HCOPS_MEM_POLICY=%s: %s at position %zu; using the default (%s)",
                quoted(p).c_str(), err.what.c_str(), err.pos + 1, describe(c->fallback).c_str());
  }
  // A rule reaching below the threshold lowers it, unless it was set.
  if (!c->explicit_threshold) thr = std::min(thr, c->env_policy.lowest_explicit());
  thr = std::max(thr, page_size());
  c->threshold = thr;
  if (const char *l = env_raw("HCOPS_MEM_FAST_LIMIT")) {
    std::size_t v = 0;
    const std::size_t n = parse_size(l, v);
    if (n && !l[n]) c->fast_limit = v;
    else warn_once("HCOPS_MEM_FAST_LIMIT", "HCOPS_MEM_FAST_LIMIT=%s is not a size; ignored", quoted(l).c_str());
  }
  read_stats(*c);
  // Training loops free and re-allocate the same tensors every step; keeping
  // freed blocks mapped spares the page faults (and huge-page zeroing) that
  // glibc spares by recycling its heap. Default: 1/8 of RAM, at most 4 GiB;
  // cache.h bounds it further by the live footprint and by age.
  {
    const std::size_t ram = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
    c->cache_limit = std::min(ram / 8, std::size_t(4) << 30);
    if (const char *v = env_raw("HCOPS_MEM_CACHE")) {
      std::size_t bytes = 0;
      const std::size_t n = parse_size(v, bytes);
      if (n && !v[n]) c->cache_limit = bytes;
      else
        warn_once("HCOPS_MEM_CACHE", "HCOPS_MEM_CACHE=%s is not a size (0 disables); using %s", quoted(v).c_str(),
                  format_size(c->cache_limit).c_str());
    }
    c->cache_decay_ns = kDefaultDecayNs;
    if (const char *v = env_raw("HCOPS_MEM_CACHE_DECAY"))
      if (!parse_decay(v, c->cache_decay_ns)) {
        c->cache_decay_ns = kDefaultDecayNs;
        warn_once("HCOPS_MEM_CACHE_DECAY",
                  "HCOPS_MEM_CACHE_DECAY=%s is not a number of seconds (e.g. 10, 0.5) or never; using 10",
                  quoted(v).c_str());
      }
  }
  // One CPU of the process. Default: its last CPU. Both read now (the
  // constructor runs on the main thread) rather than from whichever thread
  // starts the helper.
  {
    const UsableIds cpus = affinity_cpus();
    std::vector<int> helper;
    if (env_id_list("HCOPS_MEM_HELPER_CORE", "CPU", cpus, true, "using the last CPU of the process", helper))
      c->helper_core = helper[0];
    for (int cpu = static_cast<int>(cpus.size()) - 1; cpu >= 0 && c->helper_core < 0; --cpu)
      if (cpus[cpu]) c->helper_core = cpu;
  }
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
  s += "\nhelper thread: " + (c->helper_core < 0 ? std::string("not pinned") : "CPU " + std::to_string(c->helper_core));
  if (!c->cache_limit) {
    s += "\nreuse cache: off";
  } else {
    s += "\nreuse cache: at most " + format_size(c->cache_limit) +
         ", and cached + live within the recent peak of live + 1/8 (32M at least); idle blocks ";
    s += c->cache_decay_ns == kNeverDecay ? std::string("never released")
                                          : "released after " + std::to_string(c->cache_decay_ns / 1000000) + " ms";
  }
  s += "\n" + describe_kernel_pages();
  s += "\narena: " + (Arena::span() ? format_size(Arena::span()) + " of address space reserved" : std::string("none"));
  return s;
}

}  // namespace mem
}  // namespace hcops
