/* The target of every stub of a thin copy (lib/hcops/libblas.so.3,
 * libdnnl.so.2; stubs.sh writes the stubs). The copies are ELF filters of
 * libhcops.so.0: the loader loads that filtee ahead of the filter and binds
 * every symbol to it, so a stub runs only when a lookup skipped libhcops on
 * purpose (dlsym RTLD_NEXT from libhcops itself). Computing nothing there
 * would be a silent wrong answer: say which entry point, and stop. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("hidden"), noreturn)) void hcops_thin_unreached(const char *name);

void hcops_thin_unreached(const char *name) {
  fprintf(stderr,
          "hcops: %s: %s was called in this filter library instead of libhcops.so.0, its filtee "
          "(a lookup that skips libhcops.so.0 reached it)\n",
          HCOPS_THIN_SONAME, name);
  abort();
}
