/* The C side of one foreign library's forward table, generated from its
 * symbol list. Define before including:
 *   HCOPS_FORWARD_TABLE  a C identifier naming the table: blas
 *   HCOPS_FORWARD_DEF    the symbol list to include: "shim/blas/forwarded.def"
 * and the same two in the .S that includes forward_trampolines.inc.
 *
 * Defines the name table and the slot array hcops_forward_slots_<table>,
 * both in the order of the list: a symbol's index is its line's position,
 * as in the trampolines. A name listed twice is an enumerator declared
 * twice (and, in the assembly, a symbol defined twice): the build fails.
 * The assembly reaches the description through the alias
 * hcops_forward_lib_<table>_<N> defined here with the C count: two counts
 * that differ leave it undefined and the link fails. */
#include <pthread.h>

#include "shim/common/forward.h"

#if !defined(HCOPS_FORWARD_TABLE) || !defined(HCOPS_FORWARD_DEF)
#error "define HCOPS_FORWARD_TABLE and HCOPS_FORWARD_DEF before including forward_table.h"
#endif

#define HCOPS_FWD_CAT_(a, b) a##b
#define HCOPS_FWD_CAT(a, b) HCOPS_FWD_CAT_(a, b)
#define HCOPS_FWD_STR_(a) #a
#define HCOPS_FWD_STR(a) HCOPS_FWD_STR_(a)
/* The description the library's .c defines. */
#define HCOPS_FORWARD_LIB HCOPS_FWD_CAT(hcops_forward_lib_, HCOPS_FORWARD_TABLE)
#define HCOPS_FWD_SLOTS HCOPS_FWD_CAT(hcops_forward_slots_, HCOPS_FORWARD_TABLE)
#define HCOPS_FWD_NAMES HCOPS_FWD_CAT(hcops_forward_names_, HCOPS_FORWARD_TABLE)
#define HCOPS_FWD_FIND HCOPS_FWD_CAT(hcops_forward_find_, HCOPS_FORWARD_TABLE)

/* Each symbol's index (hcops_forward_<table>_<name>: a name listed twice
 * is "redeclared"), then N, the count. */
enum {
#define HCOPS_FORWARD(name) HCOPS_FWD_CAT(HCOPS_FWD_CAT(hcops_forward_, HCOPS_FORWARD_TABLE), _##name),
#include HCOPS_FORWARD_DEF
#undef HCOPS_FORWARD
  HCOPS_FWD_CAT(hcops_forward_count_, HCOPS_FORWARD_TABLE)
};
#define HCOPS_FWD_COUNT HCOPS_FWD_CAT(hcops_forward_count_, HCOPS_FORWARD_TABLE)

static const char *const HCOPS_FWD_NAMES[HCOPS_FWD_COUNT] = {
#define HCOPS_FORWARD(name) #name,
#include HCOPS_FORWARD_DEF
#undef HCOPS_FORWARD
};

__attribute__((visibility("hidden"))) void *HCOPS_FWD_SLOTS[HCOPS_FWD_COUNT];
__attribute__((visibility("hidden"))) extern struct hcops_foreign HCOPS_FORWARD_LIB;

static void HCOPS_FWD_FIND(void) { hcops_foreign_find(&HCOPS_FORWARD_LIB); }

/* The alias the trampolines' resolve stub names, carrying the C count. In a
 * function only because top-level asm takes no operands (GCC 12); the
 * function itself is empty and never called. */
__attribute__((used)) static void HCOPS_FWD_CAT(hcops_forward_count_alias_, HCOPS_FORWARD_TABLE)(void) {
  __asm__(".globl " HCOPS_FWD_STR(HCOPS_FORWARD_LIB) "_%c0\n\t"
          ".hidden " HCOPS_FWD_STR(HCOPS_FORWARD_LIB) "_%c0\n\t"
          ".set " HCOPS_FWD_STR(HCOPS_FORWARD_LIB) "_%c0, " HCOPS_FWD_STR(HCOPS_FORWARD_LIB)
          :
          : "i"(HCOPS_FWD_COUNT));
}

/* The table's part of the description. */
#define HCOPS_FORWARD_TABLE_FIELDS                                                                      \
  .names = HCOPS_FWD_NAMES, .slots = HCOPS_FWD_SLOTS, .count = HCOPS_FWD_COUNT, .find = HCOPS_FWD_FIND, \
  .once = PTHREAD_ONCE_INIT

/* Defines the description of the library: the messages' name for it, the
 * variable naming it, the probe symbol, the end of the "set <env> to ..."
 * hint, and the candidates opened when none is loaded (a list of strings).
 * HCOPS_FOREIGN_LIBRARY: the variable wins over a loaded copy (a BLAS:
 * the user may pick another one); HCOPS_FOREIGN_RUNTIME: a copy already
 * loaded wins (a runtime that must not be loaded twice, oneDNN). */
#define HCOPS_FOREIGN_DESCRIPTION(loaded_first_, ...) \
  HCOPS_FOREIGN_DESCRIPTION_MISSING(loaded_first_, NULL, NULL, __VA_ARGS__)
#define HCOPS_FOREIGN_LIBRARY(...) HCOPS_FOREIGN_DESCRIPTION(0, __VA_ARGS__)
#define HCOPS_FOREIGN_RUNTIME(...) HCOPS_FOREIGN_DESCRIPTION(1, __VA_ARGS__)
/* The same, with the target of the symbols that cannot be forwarded and the
 * list (a NULL-terminated array) of those that return zero anyway (see
 * forward.h's `missing`). */
/* The variable's earlier name, still read when the variable is unset:
 * define HCOPS_FORWARD_ENV_ALIAS before the include. */
#ifndef HCOPS_FORWARD_ENV_ALIAS
#define HCOPS_FORWARD_ENV_ALIAS NULL
#endif
#define HCOPS_FOREIGN_DESCRIPTION_MISSING(loaded_first_, missing_, missing_zero_, what_, env_, probe_, hint_, ...)    \
  static const char *const HCOPS_FWD_CAT(hcops_forward_defaults_, HCOPS_FORWARD_TABLE)[] = {__VA_ARGS__, NULL};      \
  struct hcops_foreign HCOPS_FORWARD_LIB = {.what = what_,                                                           \
                                            .env = env_,                                                             \
                                            .env_alias = HCOPS_FORWARD_ENV_ALIAS,                                    \
                                            .probe = probe_,                                                         \
                                            .defaults = HCOPS_FWD_CAT(hcops_forward_defaults_, HCOPS_FORWARD_TABLE), \
                                            .hint = hint_,                                                           \
                                            .loaded_first = loaded_first_,                                           \
                                            .missing = missing_,                                                     \
                                            .missing_zero = missing_zero_,                                           \
                                            HCOPS_FORWARD_TABLE_FIELDS}
