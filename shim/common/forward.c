/* The resolver behind every forward table (see forward.h): finds the foreign
 * library once, on the first forwarded call, and fills the slots. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fp_env.h"
#include "common/log.h"
#include "shim/common/forward.h"

/* Exported by HCOps only: a candidate that has it is HCOps under another name. */
static const char *const self_marker = "hcops_version";

static int is_self(void *sym) {
  Dl_info here, there;
  return dladdr((void *)&hcops_forward_resolve, &here) && dladdr(sym, &there) && here.dli_fbase == there.dli_fbase;
}

/* `h` is usable when it defines lib->probe itself (when `object_path` is
 * given: not through a dependency) and is not HCOps. Records its file. */
static int usable(struct hcops_foreign *lib, void *h, const char *object_path) {
  void *sym = dlsym(h, lib->probe);
  Dl_info info;
  if (!sym || is_self(sym) || dlsym(h, self_marker)) return 0;
  if (!dladdr(sym, &info) || !info.dli_fname) return 0;
  if (object_path && strcmp(info.dli_fname, object_path) != 0) return 0;
  snprintf(lib->path, sizeof lib->path, "%s", info.dli_fname);
  return 1;
}

/* The loaded objects' paths, copied while the loader lock is held (no
 * dlopen inside the callback: it would deadlock), into a buffer sized by a
 * first walk: a process such as python with PyTorch maps hundreds. */
struct loaded {
  char *buf;
  size_t used, cap;
  int n;
};

static int measure(struct dl_phdr_info *info, size_t size, void *data) {
  struct loaded *l = data;
  (void)size;
  if (info->dlpi_name && info->dlpi_name[0]) l->cap += strlen(info->dlpi_name) + 1;
  return 0;
}

static int copy_paths(struct dl_phdr_info *info, size_t size, void *data) {
  struct loaded *l = data;
  (void)size;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  size_t len = strlen(info->dlpi_name) + 1;
  if (l->used + len > l->cap) return 1; /* loaded since the first walk: its turn comes next time */
  memcpy(l->buf + l->used, info->dlpi_name, len);
  l->used += len;
  l->n++;
  return 0;
}

static void *already_loaded(struct hcops_foreign *lib) {
  struct loaded l = {0};
  dl_iterate_phdr(measure, &l);
  if (!l.cap || !(l.buf = malloc(l.cap))) return NULL;
  dl_iterate_phdr(copy_paths, &l);
  void *found = NULL;
  const char *path = l.buf;
  for (int i = 0; i < l.n && !found; ++i, path += strlen(path) + 1) {
    void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL);
    if (!h) continue;
    if (usable(lib, h, path)) found = h;
    else dlclose(h);
  }
  free(l.buf);
  return found;
}

static void *open_candidate(struct hcops_foreign *lib, const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h && usable(lib, h, NULL)) return h;
  if (h) dlclose(h);
  return NULL;
}

/* The variable's candidate, reported when unusable (a configuration mistake). */
static void *from_environment(struct hcops_foreign *lib) {
  const char *name = lib->env, *asked = secure_getenv(name);
  if ((!asked || !*asked) && lib->env_alias) asked = secure_getenv(name = lib->env_alias);
  if (!asked || !*asked) return NULL;
  dlerror(); /* a stale message would be reported as this candidate's */
  void *h = open_candidate(lib, asked);
  if (!h) {
    const char *why = dlerror();
    char shown[1100];
    hcops_log_error("cannot use %s=%s (%s); looking for another %s", name, hcops_log_escaped(asked, shown, sizeof shown),
                    why ? why : "it is HCOps itself", lib->what);
  }
  return h;
}

void hcops_foreign_find(struct hcops_foreign *lib) {
  if (lib->loaded_first && (lib->handle = already_loaded(lib))) return;
  if ((lib->handle = from_environment(lib))) return;
  if (!lib->loaded_first && (lib->handle = already_loaded(lib))) return;
  char tried[1024] = "";
  for (const char *const *c = lib->defaults; c && *c; ++c) {
    if (!**c) continue; /* configure found none */
    if ((lib->handle = open_candidate(lib, *c))) return;
    size_t len = strlen(tried);
    snprintf(tried + len, sizeof tried - len, "%s%s", len ? ", " : "", *c);
  }
  lib->path[0] = '\0';
  hcops_log_error("no %s for the symbols HCOps forwards (none already loaded; tried %s); set %s to %s", lib->what,
                  tried[0] ? tried : "nothing else", lib->env, lib->hint);
}

/* Opening the foreign library runs its constructors, and the loader's own
 * code, in the caller's thread: its floating-point environment is kept. */
const char *hcops_foreign_path(struct hcops_foreign *lib) {
  HCOPS_KEEP_FP_ENV;
  pthread_once(&lib->once, lib->find);
  return lib->handle ? lib->path : NULL;
}

static void *missing_target(const struct hcops_foreign *lib, const char *name) {
  if (!lib->missing) return (void *)&hcops_forward_missing;
  for (const char *const *z = lib->missing_zero; z && *z; ++z)
    if (strcmp(*z, name) == 0) return (void *)&hcops_forward_missing;
  return (void *)lib->missing;
}

void *hcops_forward_resolve(struct hcops_foreign *lib, unsigned idx) {
  HCOPS_KEEP_FP_ENV;
  pthread_once(&lib->once, lib->find);
  void *target = lib->handle ? dlsym(lib->handle, lib->names[idx]) : NULL;
  if (target && is_self(target)) target = NULL;
  const int missing = !target;
  if (missing) target = missing_target(lib, lib->names[idx]);
  /* Threads racing on a first call all get the same target; the one that
   * fills the slot reports a missing symbol, so it is reported once. */
  void *expected = NULL;
  if (__atomic_compare_exchange_n(&lib->slots[idx], &expected, target, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (missing && lib->handle)
      hcops_log_error("the %s %s has no %s; the call does nothing%s", lib->what, lib->path, lib->names[idx],
                      lib->missing ? " and fails" : "");
    return target;
  }
  return expected;
}
