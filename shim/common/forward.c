/* The resolver behind every forward table (see forward.h): finds the foreign
 * library once, on the first forwarded call, and fills the slots. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
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

/* Whether the object `info` describes defines `name` itself, read from its
 * dynamic symbol table (GNU or SysV hash). Used while the loader lock is
 * held, inside dl_iterate_phdr: finding the candidates without opening them
 * matters because dlopen, even RTLD_NOLOAD, runs the constructors of an
 * object the loader has not initialised yet. A forwarded call made from a
 * library's constructor (Debian's libtorch_cpu calls oneDNN from its own)
 * would otherwise run, early and out of the loader's order, the
 * constructors of every object loaded after it: a program linked with
 * libhcops_torch had its operators registered before PyTorch's own, which
 * then replaced them. */
static const ElfW(Sym) *defined_symbol(const struct dl_phdr_info *info, const char *name) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return NULL;
  ElfW(Addr) symtab = 0, strtab = 0, gnu_hash = 0, sysv_hash = 0;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    /* The loader relocates these entries in place for most objects, not for
     * the vDSO (nor, on some systems, itself): an address below the base is
     * still an offset. */
    ElfW(Addr) a = dyn->d_un.d_ptr;
    if (a < info->dlpi_addr) a += info->dlpi_addr;
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = a; break;
      case DT_STRTAB: strtab = a; break;
      case DT_GNU_HASH: gnu_hash = a; break;
      case DT_HASH: sysv_hash = a; break;
    }
  }
  if (!symtab || !strtab) return NULL;
  const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
  const char *strs = (const char *)strtab;
  const ElfW(Sym) *found = NULL;
  if (gnu_hash) {
    enum { kBits = sizeof(ElfW(Addr)) * 8 };
    const uint32_t *ht = (const uint32_t *)gnu_hash;
    const uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2], bloom_shift = ht[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(ht + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size), *chain = buckets + nbuckets;
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; ++c) h = h * 33 + *c;
    const ElfW(Addr) mask = ((ElfW(Addr))1 << (h % kBits)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % kBits));
    if (nbuckets == 0 || bloom_size == 0 || (bloom[(h / kBits) % bloom_size] & mask) != mask) return NULL;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
      const uint32_t hi = chain[i - symoffset];
      if ((hi | 1) == (h | 1) && strcmp(strs + syms[i].st_name, name) == 0 && syms[i].st_shndx != SHN_UNDEF) {
        found = &syms[i];
        break;
      }
      if (hi & 1) break;
    }
  } else if (sysv_hash) {
    const uint32_t *ht = (const uint32_t *)sysv_hash;
    const uint32_t nbucket = ht[0], *bucket = ht + 2, *chain = bucket + nbucket;
    uint32_t h = 0;
    for (const unsigned char *c = (const unsigned char *)name; *c; ++c) {
      h = (h << 4) + *c;
      const uint32_t g = h & 0xf0000000u;
      if (g) h ^= g >> 24;
      h &= ~g;
    }
    for (uint32_t i = nbucket ? bucket[h % nbucket] : 0; i != 0; i = chain[i])
      if (strcmp(strs + syms[i].st_name, name) == 0 && syms[i].st_shndx != SHN_UNDEF) {
        found = &syms[i];
        break;
      }
  }
  return found;
}

/* The paths of the loaded objects that define the probe themselves and are
 * not HCOps (no self_marker), copied while the loader lock is held (no
 * dlopen inside the callback: it would deadlock), into a buffer sized by a
 * first walk: a process such as python with PyTorch maps hundreds. */
struct loaded {
  const char *probe;
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
  if (!defined_symbol(info, l->probe) || defined_symbol(info, self_marker)) return 0;
  size_t len = strlen(info->dlpi_name) + 1;
  if (l->used + len > l->cap) return 1; /* loaded since the first walk: its turn comes next time */
  memcpy(l->buf + l->used, info->dlpi_name, len);
  l->used += len;
  l->n++;
  return 0;
}

static void *already_loaded(struct hcops_foreign *lib) {
  struct loaded l = {.probe = lib->probe};
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
