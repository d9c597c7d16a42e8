// hcops_mem_*: the phase-control API of include/hcops.h, exported by
// libhcops_mem.so.
#include <errno.h>

#include "hcops.h"
#include "common/fp_env.h"
#include "common/log.h"
#include "mem/allocator.h"
#include "mem/config.h"
#include "mem/mover.h"
#include "mem/stats.h"

namespace mem = hcops::mem;

namespace {
bool scope_of(int s, mem::Scope &out) {
  if (s == HCOPS_MEM_THREAD) out = mem::Scope::thread;
  else if (s == HCOPS_MEM_PROCESS) out = mem::Scope::process;
  else return false;
  return true;
}
}  // namespace

extern "C" {

int hcops_mem_push(int scope, const char *policy) {
  mem::Scope s;
  if (!scope_of(scope, s) || !policy) {
    errno = EINVAL;
    return -1;
  }
  mem::init();
  mem::Internal in;
  mem::ParseError err;
  if (!mem::push_policy(s, policy, err)) {
    hcops::error("hcops_mem_push(%s): %s at position %zu", hcops::quoted(policy).c_str(), err.what.c_str(),
                 err.pos + 1);
    errno = EINVAL;
    return -1;
  }
  return 0;
}

int hcops_mem_pop(int scope) {
  mem::Scope s;
  if (!scope_of(scope, s) || !mem::pop_policy(s)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

int hcops_mem_move(void *addr, size_t len, const char *target) {
  mem::init();
  mem::Internal in;
  return mem::move(addr, len, target);
}

long hcops_mem_move_async(void *addr, size_t len, const char *target) {
  mem::init();
  mem::Internal in;
  return mem::move_async(addr, len, target);
}

int hcops_mem_wait(long ticket) { return mem::wait_move(ticket); }

size_t hcops_mem_stat(const char *name) {
  // fast_capacity reads the topology, fast_limit the configuration.
  mem::init();
  mem::Internal in;
  return mem::stat(name);
}

void hcops_mem_print_info(FILE *out) {
  if (!out) return;
  hcops::KeepFpEnv keep;  // a report, not a computation: it leaves no flag
  mem::Internal in;
  const std::string s = mem::describe_config() + "\n" + mem::stats_report() + "\n";
  std::fputs(s.c_str(), out);
}

}  // extern "C"
