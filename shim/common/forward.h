/* The generic forwarder: libhcops exports the whole ABI of a foreign library
 * (the underlying BLAS, oneDNN's libdnnl.so.2) and implements only part of
 * it. Every other symbol is a trampoline (forward_trampolines.inc: forward_x86_64.inc or forward_aarch64.inc) that jumps to
 * the foreign library's own definition, found once, on the first forwarded
 * call, by the resolver below from a per-library description.
 *
 * A foreign library is described by:
 *   - a symbol list, shim/<lib>/<name>.def: one HCOPS_FORWARD(name) line
 *     per forwarded symbol, its index in the table its line's position;
 *   - a .S that defines HCOPS_FORWARD_TABLE and HCOPS_FORWARD_DEF and includes
 *     forward_trampolines.inc (the trampolines);
 *   - a .c that defines the same two macros, includes forward_table.h (the
 *     name table, slots and the checks) and defines the description:
 *       struct hcops_foreign HCOPS_FORWARD_LIB = {.what = ..., HCOPS_FORWARD_TABLE_FIELDS};
 *
 * The resolver looks, in order, for: the path or soname in the environment
 * variable `env` (after the next step when `loaded_first`); a copy already
 * loaded in the process that defines `probe` itself, found by walking the
 * loaded objects because one loaded RTLD_LOCAL (PyTorch's libraries under
 * python) is invisible to RTLD_NEXT and reopening it by name could load a
 * second copy; then `defaults`. A candidate whose `probe` is HCOps itself
 * (installed under the foreign soname) is skipped. When none is found, the
 * first forwarded call prints one error naming `env`, and every forwarded
 * call returns zero, or what the description's `missing` target returns
 * (oneDNN: a failure status); a symbol the library lacks likewise, reported
 * once. */
#pragma once

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hcops_foreign {
  /* What to look for: set by the foreign library's glue in shim/<lib>/. */
  const char *what;            /* the messages' name for it: "underlying BLAS" */
  const char *env;             /* variable naming a path or soname: "HCOPS_UNDERLYING_BLAS" */
  const char *env_alias;       /* its earlier name, read when it is unset: "HCOPS_REFERENCE_BLAS" */
  const char *probe;           /* a symbol every usable candidate defines itself: "dgemm_" */
  const char *const *defaults; /* opened when none is loaded; NULL-terminated, "" entries skipped */
  const char *hint;            /* ends "set <env> to <hint>": "a BLAS library such as libopenblas.so.0" */
  int loaded_first;            /* a loaded copy wins over `env` (a runtime that must not be loaded twice) */
  /* The target of a symbol that cannot be forwarded, NULL for
   * hcops_forward_missing (zero in every return register): for a library
   * whose functions return a status, one that says failure, since zero may
   * mean success (oneDNN's dnnl_success) with the outputs left unset. The
   * symbols in `missing_zero` (NULL-terminated; those returning no status)
   * still get hcops_forward_missing. */
  void (*missing)(void);
  const char *const *missing_zero;

  /* The symbol table, from the .def: HCOPS_FORWARD_TABLE_FIELDS. */
  const char *const *names; /* names[idx] */
  void **slots;             /* slots[idx]: the target, NULL until the first call */
  unsigned count;
  void (*find)(void); /* pthread_once takes no argument: calls hcops_foreign_find(this) */

  /* Found once, under `once`. */
  pthread_once_t once;
  void *handle;    /* dlopen handle, NULL when none was found */
  char path[4096]; /* the file that defines `probe` */
};

/* The search itself; run through `find` under pthread_once only. */
__attribute__((visibility("hidden"))) void hcops_foreign_find(struct hcops_foreign *lib);

/* The file the forwarded symbols of `lib` go to, NULL when there is none;
 * triggers the search. */
__attribute__((visibility("hidden"))) const char *hcops_foreign_path(struct hcops_foreign *lib);

/* Called by the trampolines (through hcops_forward_resolve_and_jump) on the
 * first call of slot `idx`: the target, also stored in the slot. */
__attribute__((visibility("hidden"))) void *hcops_forward_resolve(struct hcops_foreign *lib, unsigned idx);

/* The target of a symbol that cannot be forwarded: returns zero. */
__attribute__((visibility("hidden"))) void hcops_forward_missing(void);

#ifdef __cplusplus
}
#endif
