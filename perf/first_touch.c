/* hcops-first-touch [--mib N] [--wait S] [--csv FILE]: what a first write to
 * freshly mapped memory costs, in 4 KiB pages and in 2 MiB transparent huge
 * pages (madvise), the cost a training process's first step pays as its heap
 * grows, and every step pays for tensors glibc maps afresh.
 *
 * For each page kind, N MiB (default 1024) are mapped and one byte a 4 KiB page
 * written, three times over:
 *   fresh   the first mapping of the run;
 *   again   mapped again at once after the previous one was unmapped: the
 *           kernel hands back the pages just freed;
 *   waited  mapped again S seconds (default 5) after the unmapping: long
 *           enough for a virtual machine's guest that reports free memory to
 *           its host (virtio-balloon free page reporting) to have reported
 *           the freed blocks, which the host then discards and must back
 *           afresh on their next touch.
 * Reporting covers free blocks of 2^page_reporting_order pages and larger
 * (the order is printed when the kernel has it): a huge page is always such a
 * block, while 4 KiB faults are served from smaller fragments first.
 * Prints a table (GB/s of first-touched memory, and the time); --csv writes
 * its rows. The 4 KiB kind runs first, then the huge pages: the order is
 * fixed because each kind's "fresh" draws on what the other left. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bench_util.h"

#define HUGE_PAGE ((size_t)2 << 20)

static int read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  const int ok = fgets(buf, (int)n, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = 0;
  return ok;
}

/* Seconds to write one byte a 4 KiB page of a fresh `bytes` mapping advised
 * `advice`; the mapping is gone on return. -1 when it cannot be had. */
static double touch_once(size_t bytes, int advice) {
  /* Over-map by one huge page so that the block can start on a 2 MiB
   * boundary: a huge page needs an aligned 2 MiB of the range. */
  const size_t len = bytes + HUGE_PAGE;
  char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    fprintf(stderr, "hcops-first-touch: mmap of %zu MiB: %s\n", len >> 20, strerror(errno));
    return -1;
  }
  char *p = (char *)(((unsigned long)raw + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
  if (madvise(p, bytes, advice) != 0)
    fprintf(stderr, "hcops-first-touch: madvise(%s): %s (timed as the kernel left it)\n",
            advice == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE", strerror(errno));
  const double t0 = bench_now_s();
  for (size_t i = 0; i < bytes; i += 4096) ((volatile char *)p)[i] = 1;
  const double t = bench_now_s() - t0;
  munmap(raw, len);
  return t;
}

int main(int argc, char **argv) {
  long mib = 1024;
  double wait_s = 5;
  const char *csv = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = strtol(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
      wait_s = strtod(argv[++i], NULL);
    } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv = argv[++i];
    } else {
      fprintf(stderr, "usage: hcops-first-touch [--mib N] [--wait S] [--csv FILE]\n");
      return 2;
    }
  }
  if (mib < 2 || wait_s < 0) {
    fprintf(stderr, "hcops-first-touch: --mib at least 2, --wait at least 0\n");
    return 2;
  }
  const size_t bytes = (size_t)mib << 20;

  char thp[128] = "unknown", order[32] = "";
  read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
  const int reporting = read_line("/sys/module/page_reporting/parameters/page_reporting_order", order, sizeof order);
  printf("first touch of %ld MiB, one write a 4 KiB page; transparent huge pages: %s; free page reporting: %s%s%s\n",
         mib, thp, reporting ? "order " : "not in this kernel", reporting ? order : "",
         reporting ? " (free blocks of that order and above may be given back to a hypervisor)" : "");

  static const struct {
    const char *name;
    int advice;
  } kinds[] = {{"4k", MADV_NOHUGEPAGE}, {"thp", MADV_HUGEPAGE}};
  static const char *const phases[] = {"fresh", "again", "waited"};
  double t[2][3];
  for (int k = 0; k < 2; ++k) {
    for (int ph = 0; ph < 3; ++ph) {
      if (ph == 2 && wait_s > 0) usleep((useconds_t)(wait_s * 1e6));
      t[k][ph] = touch_once(bytes, kinds[k].advice);
      if (t[k][ph] < 0) return 1;
    }
  }
  printf("%-5s %-7s %9s %8s\n", "pages", "mapping", "GB/s", "s");
  for (int k = 0; k < 2; ++k)
    for (int ph = 0; ph < 3; ++ph)
      printf("%-5s %-7s %9.2f %8.3f\n", kinds[k].name, phases[ph], bytes / t[k][ph] / 1e9, t[k][ph]);
  if (csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      fprintf(stderr, "hcops-first-touch: %s: %s\n", csv, strerror(errno));
      return 1;
    }
    fprintf(f, "pages,mapping,mib,wait_s,gb_per_s,seconds,page_reporting_order\n");
    for (int k = 0; k < 2; ++k)
      for (int ph = 0; ph < 3; ++ph)
        fprintf(f, "%s,%s,%ld,%g,%.3f,%.4f,%s\n", kinds[k].name, phases[ph], mib, ph == 2 ? wait_s : 0.0,
                bytes / t[k][ph] / 1e9, t[k][ph], reporting ? order : "");
    fclose(f);
    printf("wrote %s\n", csv);
  }
  return 0;
}
