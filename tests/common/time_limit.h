/* test_time_limit(seconds): a C test's own limit (alarm) scaled as
 * tests/time_limits.py and time_limits.sh scale the limits on children (the
 * docstring there says why): by HCOPS_TEST_TIME_SCALE when it is a decimal
 * number > 0 and below 10^6 (anything else is warned about and ignored),
 * otherwise by 8 under emulation (HCOPS_TEST_EMULATED=yes) and 1 natively;
 * whole seconds rounded half up, at least 1. tests/test_time_limits.sh
 * checks that the three agree (through time_limit_probe). */
#ifndef HCOPS_TESTS_TIME_LIMIT_H
#define HCOPS_TESTS_TIME_LIMIT_H

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned test_time_limit(unsigned seconds) {
  const char *emulated = getenv("HCOPS_TEST_EMULATED");
  double scale = emulated && !strcmp(emulated, "yes") ? 8 : 1;
  const char *given = getenv("HCOPS_TEST_TIME_SCALE");
  if (given && *given) {
    regex_t re;
    int ok = 0;
    if (regcomp(&re, "^[0-9]*\\.?[0-9]+([eE][-+]?[0-9]+)?$", REG_EXTENDED | REG_NOSUB) == 0) {
      ok = regexec(&re, given, 0, NULL, 0) == 0;
      regfree(&re);
    }
    /* strtod in the C locale: a test program does not call setlocale. */
    const double v = ok ? strtod(given, NULL) : 0;
    if (ok && v > 0 && v < 1e6)
      scale = v;
    else
      fprintf(stderr, "time_limits: HCOPS_TEST_TIME_SCALE=%s is not a number between 0 and 10^6; ignored\n", given);
  }
  const double s = seconds * scale + 0.5;
  return s < 1 ? 1 : s > 4e9 ? 4000000000u : (unsigned)s;
}

#endif
