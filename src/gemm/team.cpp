#include "gemm/team.h"

#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/contention.h"
#include "common/env.h"
#include "common/fp_env.h"
#include "common/log.h"

namespace hcops {

namespace {

bool g_forked_serial = false;
bool g_parent_threaded = false;

// Threads in this process, from /proc/self/stat field 20; 2 when unknown so
// that the child errs on the safe, serial side.
int process_threads() {
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 2;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 2;
  buf[n] = 0;
  const char *p = std::strrchr(buf, ')');  // the command name may contain spaces
  int field = 2, threads = 2;
  for (; p && *p; ++p)
    if (*p == ' ' && ++field == 20) {
      std::sscanf(p + 1, "%d", &threads);
      break;
    }
  return threads;
}

void before_fork() { g_parent_threaded = process_threads() > 1; }
void in_child() { g_forked_serial = g_forked_serial || g_parent_threaded; }

__attribute__((constructor)) void register_fork_handlers() { pthread_atfork(before_fork, nullptr, in_child); }

// The caller already parallelises: nest no team of ours inside it.
bool in_parallel_region() { return omp_in_parallel() || omp_get_level() > 0; }

// HCOPS_NUM_THREADS when set to a valid value, else 0.
long configured_threads() {
  static const long configured = env_long("HCOPS_NUM_THREADS", 0, 1, 4096);
  return configured;
}

}  // namespace

// fit_runtime_team's change of this thread's team: the caller's own size
// and the one set in its place (0, 0 when unchanged).
static thread_local int t_caller_threads = 0, t_fitted_threads = 0;

int allowed_threads() {
  if (in_parallel_region() || g_forked_serial) return 1;
  if (configured_threads()) return static_cast<int>(configured_threads());
  const int icv = omp_get_max_threads();
  return t_caller_threads && icv == t_fitted_threads ? t_caller_threads : icv;
}

void fit_runtime_team() {
  if (in_parallel_region() || g_forked_serial) return;
  const int icv = omp_get_max_threads();
  if (t_caller_threads && icv != t_fitted_threads) t_caller_threads = 0;  // the caller has set its own since
  const int caller = t_caller_threads ? t_caller_threads : icv;
  const int team = settled_team(caller);
  if (team == icv) return;
  omp_set_num_threads(team);
  t_fitted_threads = team;
  t_caller_threads = team == caller ? 0 : caller;
  if (verbose_level() >= 1) print_line("hcops_verbose,info,runtime team %d of %d\n", team, caller);
}

int max_threads() { return contended_team(allowed_threads()); }

const char *thread_policy() {
  if (in_parallel_region()) return "serial: called inside an OpenMP parallel region";
  if (g_forked_serial) return "serial: forked from a multi-threaded parent";
  static thread_local char note[200];
  if (contention_note(allowed_threads(), note, sizeof note)) return note;
  return configured_threads() ? "HCOPS_NUM_THREADS" : "omp_get_max_threads()";
}

void bind_to_domain(const Topology &topo, const Domain &d) {
  static const bool enabled = env_long("HCOPS_BIND", 1, 0, 1) != 0;
  thread_local int bound = -1;
  if (!enabled || !topo.this_system || topo.domains.size() < 2 || bound == d.index || !d.cpuset) return;
  KeepFpEnv keep;  // the caller's thread is thread 0 of the team
  if (hwloc_set_cpubind(topo.hw, d.cpuset, HWLOC_CPUBIND_THREAD) != 0)
    warn_once("bind", "cannot bind GEMM threads to their NUMA domain (%s); running unbound", std::strerror(errno));
  bound = d.index;
}

}  // namespace hcops
