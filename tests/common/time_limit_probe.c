/* time_limit_probe SECONDS: prints test_time_limit(SECONDS), for
 * tests/test_time_limits.sh to compare with time_limits.sh and .py. */
#include <stdio.h>
#include <stdlib.h>

#include "common/time_limit.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: time_limit_probe SECONDS\n");
    return 2;
  }
  printf("%u\n", test_time_limit((unsigned)strtoul(argv[1], NULL, 10)));
  return 0;
}
