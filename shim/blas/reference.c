/* Finds the reference BLAS that forwarded routines jump to, once, on the
 * first forwarded call. In order:
 *   1. HCOPS_REFERENCE_BLAS=path;
 *   2. a BLAS already loaded in the process (never a second runtime) — found
 *      by walking the loaded objects, because a library loaded RTLD_LOCAL
 *      (PyTorch's libblas.so.3 under python) is invisible to RTLD_NEXT;
 *   3. the OpenBLAS found by configure, then netlib's reference.
 * A candidate whose symbols resolve to libhcops itself (installed as the
 * libblas.so.3 alternative, opening "libblas.so.3" finds us) is skipped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "common/log.h"

static const char *const names[] = {
#define HCOPS_FORWARD(idx, name) #name,
#include "forwarded.def"
#undef HCOPS_FORWARD
};
#define NSLOTS (sizeof names / sizeof names[0])

__attribute__((visibility("hidden"))) void *hcops_forward_slots[NSLOTS];
__attribute__((visibility("hidden"))) void hcops_forward_missing(void);
__attribute__((visibility("hidden"))) void *hcops_forward_resolve(unsigned idx);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *reference;              /* dlopen handle, NULL when none */
static char reference_path[4096];
static const char *const self_marker = "hcops_version";

static int is_self(void *sym) {
  Dl_info here, there;
  return dladdr((void *)&hcops_forward_resolve, &here) && dladdr(sym, &there) &&
         here.dli_fbase == there.dli_fbase;
}

/* `h` is usable when it defines dgemm_ itself (not through a dependency,
 * unless `own_only` is 0) and is not HCOps. */
static int usable(void *h, const char *object_path, int own_only) {
  void *sym = dlsym(h, "dgemm_");
  Dl_info info;
  if (!sym || is_self(sym) || dlsym(h, self_marker)) return 0;
  if (!dladdr(sym, &info)) return 0;
  if (own_only && object_path && strcmp(info.dli_fname, object_path) != 0) return 0;
  snprintf(reference_path, sizeof reference_path, "%s", info.dli_fname);
  return 1;
}

struct loaded { char paths[64][1024]; int n; };

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
  struct loaded *l = data;
  (void)size;
  if (info->dlpi_name && info->dlpi_name[0] && l->n < 64)
    snprintf(l->paths[l->n++], sizeof l->paths[0], "%s", info->dlpi_name);
  return 0;
}

static void *already_loaded(void) {
  static struct loaded l; /* 64 KiB: too much for a foreign thread's stack */
  l.n = 0;
  dl_iterate_phdr(collect, &l);  /* no dlopen inside: the callback holds the loader lock */
  for (int i = 0; i < l.n; ++i) {
    void *h = dlopen(l.paths[i], RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL);
    if (!h) continue;
    if (usable(h, l.paths[i], 1)) return h;
    dlclose(h);
  }
  return NULL;
}

static void *open_candidate(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h && usable(h, NULL, 0)) return h;
  if (h) dlclose(h);
  return NULL;
}

static void find_reference(void) {
  const char *asked = secure_getenv("HCOPS_REFERENCE_BLAS");
  if (asked && *asked) {
    if ((reference = open_candidate(asked))) return;
    const char *why = dlerror();
    hcops_log_error("cannot use HCOPS_REFERENCE_BLAS=%s (%s); looking for another reference BLAS", asked,
          why ? why : "it has no BLAS symbols, or is libhcops itself");
  }
  if ((reference = already_loaded())) return;
  static const char *const defaults[] = {HCOPS_DEFAULT_REFERENCE_BLAS, "libopenblas.so.0",
                                         "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"};
  char tried[1024] = "";
  for (size_t i = 0; i < sizeof defaults / sizeof *defaults; ++i) {
    if ((reference = open_candidate(defaults[i]))) return;
    snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", i ? ", " : "", defaults[i]);
  }
  hcops_log_error("no reference BLAS for the routines HCOps forwards (none already loaded; tried %s); "
        "set HCOPS_REFERENCE_BLAS to a BLAS library such as libopenblas.so.0", tried);
}

void *hcops_forward_resolve(unsigned idx) {
  pthread_once(&once, find_reference);
  void *target = reference ? dlsym(reference, names[idx]) : NULL;
  if (target && is_self(target)) target = NULL;
  if (!target) {
    if (reference)
      hcops_log_error("the reference BLAS %s has no %s; the call does nothing", reference_path, names[idx]);
    target = (void *)&hcops_forward_missing;
  }
  __atomic_store_n(&hcops_forward_slots[idx], target, __ATOMIC_RELEASE);
  return target;
}

const char *hcops_reference_blas(void) {
  pthread_once(&once, find_reference);
  return reference ? reference_path : NULL;
}
