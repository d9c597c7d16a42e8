#include "common/log.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "common/env.h"

namespace hcops {

int verbose_level() {
  static const int level = static_cast<int>(env_long("HCOPS_VERBOSE", 0, 0, 2));
  return level;
}

static void vwrite_line(const char *prefix, const char *fmt, va_list ap) {
  char buf[1024];
  int n = std::snprintf(buf, sizeof buf, "%s", prefix);
  int m = std::vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  size_t len = std::min(sizeof buf - 2, static_cast<size_t>(n + (m > 0 ? m : 0)));
  buf[len++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, buf, len);
  (void)ignored;
}

void error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("hcops: ", fmt, ap);
  va_end(ap);
}

extern "C" void hcops_log_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("hcops: ", fmt, ap);
  va_end(ap);
}

namespace {
// Held across fork, so a child never inherits it locked by a thread that
// did not come along.
pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((constructor)) void register_fork_handlers() {
  pthread_atfork([] { pthread_mutex_lock(&once_lock); }, [] { pthread_mutex_unlock(&once_lock); },
                 [] { pthread_mutex_init(&once_lock, nullptr); });
}

bool first_time(const char *key) {
  static std::set<std::string> *seen = new std::set<std::string>;  // never destroyed: used at exit
  pthread_mutex_lock(&once_lock);
  const bool first = seen->insert(key).second;
  pthread_mutex_unlock(&once_lock);
  return first;
}
}  // namespace

void warn_once(const char *key, const char *fmt, ...) {
  if (!first_time(key)) return;
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("hcops: warning: ", fmt, ap);
  va_end(ap);
}

void note_once(const char *key, const char *fmt, ...) {
  if (verbose_level() < 1 || !first_time(key)) return;
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("hcops_verbose,info,", fmt, ap);
  va_end(ap);
}

std::string quoted(const char *value) {
  constexpr std::size_t kMax = 200;
  std::string s = "\"";
  std::size_t i = 0;
  for (; value && value[i] && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == '\\' || c == '"') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      s += hex;
    } else {
      s += static_cast<char>(c);
    }
  }
  s += '"';
  if (value && value[i]) s += "...";
  return s;
}

void print_line(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("", fmt, ap);
  va_end(ap);
}

}  // namespace hcops
