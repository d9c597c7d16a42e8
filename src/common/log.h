// Diagnostics of a library that lives in someone else's process: silent unless
// HCOPS_VERBOSE asks, errors on stderr prefixed "hcops:", each warning once.
#pragma once

#include "common/api.h"
#ifdef __cplusplus
extern "C" {
#endif
// error() for the C parts of the library (the reference resolver); hidden, so
// it is not exported from libhcops.
__attribute__((visibility("hidden"), format(printf, 1, 2))) void hcops_log_error(const char *fmt, ...);
// escaped() for the C parts: `value` escaped into `buf` (at most 256 bytes of
// it, and cut to fit `size`), which is returned.
__attribute__((visibility("hidden"))) const char *hcops_log_escaped(const char *value, char *buf, unsigned long size);
#ifdef __cplusplus
}

#include <cstddef>
#include <string>

namespace hcops {

// `value` made safe to quote inside one line of a message: printable ASCII
// as it is, but `"` and `\` as \" and \\; newline, tab and carriage return
// as \n, \t, \r; every other byte as \xNN. At most `max_bytes` of the
// value are shown, then "..." (a warning line stays short).
std::string escaped(const char *value, std::size_t max_bytes = 64);

// escaped() between double quotes, for every message that quotes an
// environment value or argument: "1\n2", or "<first 64 bytes>"... when cut.
HCOPS_API std::string quoted(const char *value);

// HCOPS_VERBOSE: 0 silent, 1 one line per native GEMM, 2 also a summary at exit.
HCOPS_API int verbose_level();

// "hcops: <message>\n" on stderr, unconditionally (errors).
HCOPS_API void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Like error(), but only the first time `key` is seen in this process.
HCOPS_API void warn_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Like warn_once(), but only when HCOPS_VERBOSE asks: for conditions of the
// environment (no NUMA policy in a container, no fast memory) that change
// what the library does without being anybody's mistake. Printed as
// "hcops_verbose,info,<message>", among the verbose lines.
void note_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// A single write(2) of a formatted line, so lines from threads never interleave.
HCOPS_API void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace hcops
#endif
