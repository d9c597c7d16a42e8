/* Finds the xerbla_ an application or one of its modules defines, which
 * BLAS/LAPACK errors would have reached without HCOps.
 *
 * Why: a LAPACK loaded as the dependency of a module opened RTLD_LOCAL
 * (numpy's lapack_lite, which defines xerbla_ to raise ValueError) binds
 * xerbla_ to that module through its local scope — unless a library in the
 * global scope defines it first, as a preloaded (or -l linked) libhcops
 * does. Our xerbla_ then receives the report, and passes it on to the
 * handler found here.
 *
 * The loader's facts decide, not library names. A handler is defined by
 *   - an object nobody loaded as a dependency (no loaded object lists it in
 *     DT_NEEDED): the executable, a preload, a dlopen'ed module — the BLAS
 *     and LAPACK libraries, whose xerbla_ is their default message, are
 *     loaded as dependencies;
 *   - that is not a BLAS itself (does not define dgemm_: the reference BLAS
 *     HCOps or a test opens on its own is such a root);
 *   - and is not HCOps.
 * The first such object in load order wins, as the executable's definition
 * wins in the global scope. The result is cached and looked up again when
 * the set of loaded objects changes (dlpi_adds/dlpi_subs), so a module
 * opened after a first error, or closed since, is seen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shim/common/blas_abi.h"
#include "common/fp_env.h"

#define MAX_OBJECTS 512

struct object {
  char path[512];
  char soname[128];
  uintptr_t lo, hi; /* span of its PT_LOAD segments */
  int needed;       /* listed in some loaded object's DT_NEEDED */
};

/* Static: too large for a foreign thread's stack; used under `lock` only. */
static struct object objects[MAX_OBJECTS];
static int nobjects;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long seen_adds, seen_subs;
static int resolved;
static hcops_xerbla_fn handler;

static void here(void) {}

static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  return NULL;
}

/* glibc relocates DT_STRTAB in place where the dynamic section is writable
 * (x86-64), not where it is read-only (the vDSO): accept both. */
static const char *strtab_of(const struct dl_phdr_info *info, const ElfW(Dyn) * dyn) {
  for (; dyn && dyn->d_tag != DT_NULL; ++dyn)
    if (dyn->d_tag == DT_STRTAB) {
      uintptr_t p = dyn->d_un.d_ptr;
      return (const char *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
    }
  return NULL;
}

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  if (nobjects == MAX_OBJECTS) return 1;
  struct object *o = &objects[nobjects++];
  memset(o, 0, sizeof *o);
  snprintf(o->path, sizeof o->path, "%s", info->dlpi_name ? info->dlpi_name : "");
  o->lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_LOAD) {
      uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      if (a < o->lo) o->lo = a;
      if (a + info->dlpi_phdr[i].p_memsz > o->hi) o->hi = a + info->dlpi_phdr[i].p_memsz;
    }
  const ElfW(Dyn) *dyn = dynamic_of(info);
  const char *str = strtab_of(info, dyn);
  for (; dyn && str && dyn->d_tag != DT_NULL; ++dyn)
    if (dyn->d_tag == DT_SONAME) snprintf(o->soname, sizeof o->soname, "%s", str + dyn->d_un.d_val);
  return 0;
}

static int names(const struct object *o, const char *needed) {
  const char *base = strrchr(o->path, '/');
  return (o->soname[0] && strcmp(o->soname, needed) == 0) || strcmp(o->path, needed) == 0 ||
         (base && strcmp(base + 1, needed) == 0);
}

static int mark_needed(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  const ElfW(Dyn) *dyn = dynamic_of(info);
  const char *str = strtab_of(info, dyn);
  for (; dyn && str && dyn->d_tag != DT_NULL; ++dyn)
    if (dyn->d_tag == DT_NEEDED)
      for (int i = 0; i < nobjects; ++i)
        if (!objects[i].needed && names(&objects[i], str + dyn->d_un.d_val)) objects[i].needed = 1;
  return 0;
}

static int counters(struct dl_phdr_info *info, size_t size, void *data) {
  unsigned long long *c = data;
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 1;
  c[0] = info->dlpi_adds;
  c[1] = info->dlpi_subs;
  return 1; /* the first object is enough */
}

static int within(const struct object *o, const void *p) { return p && (uintptr_t)p >= o->lo && (uintptr_t)p < o->hi; }

/* `o`'s own definition of `name`, or NULL (a dependency's does not count). */
static void *own_symbol(void *h, const struct object *o, const char *name) {
  void *sym = dlsym(h, name);
  return within(o, sym) ? sym : NULL;
}

static hcops_xerbla_fn find_handler(void) {
  HCOPS_KEEP_FP_ENV; /* dlopen runs loader code in the caller's thread */
  nobjects = 0;
  dl_iterate_phdr(collect, NULL); /* no dlopen inside: the callbacks hold the loader lock */
  dl_iterate_phdr(mark_needed, NULL);
  for (int i = 0; i < nobjects; ++i) {
    const struct object *o = &objects[i];
    if (o->needed || within(o, (const void *)&here)) continue;
    /* The executable has no name; its handle searches it first. */
    void *h = o->path[0] ? dlopen(o->path, RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL) : dlopen(NULL, RTLD_LAZY);
    if (!h) continue;
    void *fn = own_symbol(h, o, "xerbla_");
    if (fn && own_symbol(h, o, "dgemm_")) fn = NULL;
    dlclose(h); /* NOLOAD took a reference: never pin a module */
    if (fn) return (hcops_xerbla_fn)fn;
  }
  return NULL;
}

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork(void) { pthread_mutex_unlock(&lock); }
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_fork_handlers(void) { pthread_atfork(before_fork, after_fork, after_fork); }

hcops_xerbla_fn hcops_application_xerbla(void) {
  unsigned long long now[2] = {0, 0};
  pthread_once(&atfork_once, register_fork_handlers);
  dl_iterate_phdr(counters, now);
  pthread_mutex_lock(&lock);
  if (!resolved || now[0] != seen_adds || now[1] != seen_subs) {
    handler = find_handler();
    seen_adds = now[0];
    seen_subs = now[1];
    resolved = 1;
  }
  hcops_xerbla_fn fn = handler;
  pthread_mutex_unlock(&lock);
  return fn;
}
