/* hcops-first-touch [--mib N] [--wait S] [--csv FILE]: what a first write to
 * freshly mapped memory costs, in base pages and in transparent huge pages
 * (madvise), the cost a training process's first step pays as its heap grows,
 * and every step pays for tensors glibc maps afresh.
 *
 * For each page kind, N MiB (default 1024) are mapped and one byte a base page
 * written, three times over:
 *   fresh   mapped after whatever ran before (for the huge pages: the base
 *           pages' three mappings, just unmapped);
 *   again   mapped again at once after the previous one was unmapped: the
 *           kernel hands back the pages just freed;
 *   waited  mapped again S seconds (default 5) after the unmapping: long
 *           enough for a virtual machine's guest that reports free memory to
 *           its host (virtio-balloon free page reporting) to have reported
 *           the freed blocks, which the host then discards and must back
 *           afresh on their next touch.
 * Reporting covers free blocks of 2^page_reporting_order pages and larger: a
 * huge page is always such a block. The line above the table says whether
 * the kernel has reporting and a balloon that uses it. Each huge-page row
 * counts the huge pages the kernel actually gave (/proc/vmstat's
 * thp_fault_alloc around it; other processes' faults count too): a row with
 * none measured base pages. Prints a table (GB/s of first-touched memory,
 * and the time); --csv writes its rows. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"

static int read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  const int ok = fgets(buf, (int)n, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = 0;
  return ok;
}

/* /proc/vmstat's thp_fault_alloc, -1 when it cannot be read. */
static long thp_faults(void) {
  FILE *f = fopen("/proc/vmstat", "r");
  if (!f) return -1;
  char name[64];
  long v, found = -1;
  while (fscanf(f, "%63s %ld", name, &v) == 2)
    if (!strcmp(name, "thp_fault_alloc")) found = v;
  fclose(f);
  return found;
}

/* Whether a virtio balloon bound to its driver negotiated free page
 * reporting: bit 5 (VIRTIO_BALLOON_F_REPORTING) of its features string. */
static int balloon_reports(void) {
  const char *dir = "/sys/bus/virtio/drivers/virtio_balloon";
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; (e = readdir(d));) {
    char path[512], bits[160];
    if (strncmp(e->d_name, "virtio", 6)) continue;
    snprintf(path, sizeof path, "%s/%s/features", dir, e->d_name);
    if (read_line(path, bits, sizeof bits) && strlen(bits) > 5 && bits[5] == '1') found = 1;
  }
  closedir(d);
  return found;
}

/* Seconds to write one byte a base page of a fresh `bytes` mapping advised
 * `advice`, aligned to `huge` bytes; the mapping is gone on return. -1 when it
 * cannot be had. */
static double touch_once(size_t bytes, size_t page, size_t huge, int advice) {
  /* Over-map by one huge page so that the block can start on a huge page
   * boundary: a huge page needs an aligned range of its size. */
  const size_t len = bytes + huge;
  char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    fprintf(stderr, "hcops-first-touch: mmap of %zu MiB: %s\n", len >> 20, strerror(errno));
    return -1;
  }
  char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
  if (madvise(p, bytes, advice) != 0)
    fprintf(stderr, "hcops-first-touch: madvise(%s): %s (timed as the kernel left it)\n",
            advice == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE", strerror(errno));
  const double t0 = bench_now_s();
  for (size_t i = 0; i < bytes; i += page) ((volatile char *)p)[i] = 1;
  const double t = bench_now_s() - t0;
  munmap(raw, len);
  return t;
}

static int parse_long(const char *s, long *v) {
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  return *s && !*end && !errno;
}

static int parse_seconds(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *s && !*end && !errno && *v >= 0 && *v <= 3600;
}

int main(int argc, char **argv) {
  long mib = 1024;
  double wait_s = 5;
  const char *csv = NULL;
  for (int i = 1; i < argc; ++i) {
    int ok = 1;
    if (!strcmp(argv[i], "--mib") && i + 1 < argc) {
      ok = parse_long(argv[++i], &mib) && mib >= 2 && mib <= (1L << 30);
    } else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
      ok = parse_seconds(argv[++i], &wait_s);
    } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv = argv[++i];
    } else {
      ok = 0;
    }
    if (!ok) {
      fprintf(stderr, "usage: hcops-first-touch [--mib N (2 or more)] [--wait S (0 to 3600)] [--csv FILE]\n");
      return 2;
    }
  }
  const size_t bytes = (size_t)mib << 20;
  const long page_size = sysconf(_SC_PAGESIZE);
  const size_t page = page_size > 0 ? (size_t)page_size : 4096;
  char thp[128] = "", line[64] = "", order[32] = "";
  size_t huge = (size_t)2 << 20;
  if (read_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", line, sizeof line) && atol(line) > 0)
    huge = (size_t)atol(line);
  const int have_thp = read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
  const int have_order = read_line("/sys/module/page_reporting/parameters/page_reporting_order", order, sizeof order);
  const int reports = have_order && balloon_reports();
  printf("first touch of %ld MiB, one write a %zu-byte page; huge pages of %zu KiB: %s; free page reporting: %s%s%s\n",
         mib, page, huge >> 10, have_thp ? thp : "not in this kernel",
         !have_order ? "not in this kernel" : reports ? "on, free blocks of 2^" : "no reporting device",
         reports ? order : "", reports ? " pages and larger go back to the hypervisor" : "");

  static const struct {
    const char *name;
    int advice;
  } kinds[] = {{"base", MADV_NOHUGEPAGE}, {"thp", MADV_HUGEPAGE}};
  static const char *const phases[] = {"fresh", "again", "waited"};
  double t[2][3];
  long got_huge[2][3];
  for (int k = 0; k < 2; ++k) {
    for (int ph = 0; ph < 3; ++ph) {
      if (ph == 2 && wait_s > 0) {
        struct timespec w = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        while (nanosleep(&w, &w) != 0 && errno == EINTR) {
        }
      }
      const long before = thp_faults();
      t[k][ph] = touch_once(bytes, page, huge, kinds[k].advice);
      const long after = thp_faults();
      if (t[k][ph] < 0) return 1;
      got_huge[k][ph] = before >= 0 && after >= 0 ? after - before : -1;
    }
  }
  printf("%-5s %-7s %9s %8s %11s\n", "pages", "mapping", "GB/s", "s", "huge pages");
  for (int k = 0; k < 2; ++k)
    for (int ph = 0; ph < 3; ++ph)
      printf("%-5s %-7s %9.2f %8.3f %11ld\n", kinds[k].name, phases[ph], bytes / t[k][ph] / 1e9, t[k][ph],
             got_huge[k][ph]);
  if (csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      fprintf(stderr, "hcops-first-touch: %s: %s\n", csv, strerror(errno));
      return 1;
    }
    fprintf(f, "pages,mapping,mib,wait_s,gb_per_s,seconds,huge_pages_faulted,page_reporting_order\n");
    for (int k = 0; k < 2; ++k)
      for (int ph = 0; ph < 3; ++ph)
        fprintf(f, "%s,%s,%ld,%g,%.3f,%.4f,%ld,%s\n", kinds[k].name, phases[ph], mib, ph == 2 ? wait_s : 0.0,
                bytes / t[k][ph] / 1e9, t[k][ph], got_huge[k][ph], reports ? order : "");
    if (fclose(f) != 0) {
      fprintf(stderr, "hcops-first-touch: %s: %s\n", csv, strerror(errno));
      return 1;
    }
    printf("wrote %s\n", csv);
  }
  return 0;
}
