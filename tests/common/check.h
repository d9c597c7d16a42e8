/* The check of the C test programs that count failures and go on (those of
 * dnnl/ and mpi/; abi/, engine/, mem/ and ops/ use CMocka):
 *   CHECK(cond)               counts a check; a false cond is a failure;
 *   CHECK(cond, fmt, ...)     the same, reported with the message (printf).
 * The program defines the integers `checks` and `failures`, and CHECK_RANK
 * (an int) before the include where several ranks print. The first
 * CHECK_LINES failures print one whole line each on stderr, so that the lines
 * of ranks and threads do not interleave:
 *   [rank R: ]FAIL: <message, else the condition> (file:line)
 * A threaded program holds its lock around CHECK. */
#pragma once

#include <stdarg.h>
#include <stdio.h>

#ifndef CHECK_RANK
#define CHECK_RANK (-1)
#endif
#define CHECK_LINES 25

/* fmt starts with a space (the macro's, so that a CHECK without a message
 * passes a format GCC does not call empty); the line has it without. */
__attribute__((format(printf, 6, 7))) static inline void check_report_(long nth, int rank, const char *file,
                                                                       int line, const char *cond,
                                                                       const char *fmt, ...) {
  if (nth > CHECK_LINES) return;
  char msg[512];
  size_t n = 0;
#define CHECK_ROOM_ (n < sizeof msg ? sizeof msg - n : 0)
#define CHECK_END_ (n < sizeof msg ? msg + n : msg + sizeof msg - 1)
  if (rank >= 0) n += (size_t)snprintf(CHECK_END_, CHECK_ROOM_, "rank %d: ", rank);
  n += (size_t)snprintf(CHECK_END_, CHECK_ROOM_, "FAIL: ");
  if (fmt[1]) {
    va_list ap;
    va_start(ap, fmt);
    n += (size_t)vsnprintf(CHECK_END_, CHECK_ROOM_, fmt + 1, ap);
    va_end(ap);
  } else {
    n += (size_t)snprintf(CHECK_END_, CHECK_ROOM_, "%s", cond);
  }
  snprintf(CHECK_END_, CHECK_ROOM_, " (%s:%d)", file, line);
#undef CHECK_ROOM_
#undef CHECK_END_
  fprintf(stderr, "%s\n", msg);
}

#define CHECK(cond, ...)                                                                               \
  do {                                                                                                 \
    ++checks;                                                                                          \
    if (!(cond)) check_report_(++failures, CHECK_RANK, __FILE__, __LINE__, #cond, " " __VA_ARGS__);   \
  } while (0)
