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

namespace {
// Escapes `value`'s bytes; `cut` is set when bytes were left out.
std::string escape_bytes(const char *value, std::size_t max_bytes, bool &cut) {
  static const char hex[] = "0123456789abcdef";
  std::string s;
  std::size_t i = 0;
  for (; value[i] && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    switch (c) {
      case '\n': s += "\\n"; break;
      case '\t': s += "\\t"; break;
      case '\r': s += "\\r"; break;
      case '"': s += "\\\""; break;
      case '\\': s += "\\\\"; break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          s += static_cast<char>(c);
        } else {
          s += "\\x";
          s += hex[c >> 4];
          s += hex[c & 15];
        }
    }
  }
  cut = value[i] != '\0';
  return s;
}
}  // namespace

std::string escaped(const char *value, std::size_t max_bytes) {
  if (!value) return "(null)";
  bool cut = false;
  std::string s = escape_bytes(value, max_bytes, cut);
  return cut ? s + "..." : s;
}

std::string quoted(const char *value) {
  if (!value) return "(null)";
  bool cut = false;
  const std::string s = escape_bytes(value, 64, cut);
  return "\"" + s + (cut ? "\"..." : "\"");
}

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

extern "C" const char *hcops_log_escaped(const char *value, char *buf, unsigned long size) {
  if (!size) return buf;
  std::snprintf(buf, size, "%s", hcops::escaped(value, 256).c_str());
  return buf;
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

void print_line(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite_line("", fmt, ap);
  va_end(ap);
}

}  // namespace hcops
