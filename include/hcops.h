/* HCOps: our own small C API, beside the BLAS/CBLAS ABI that libhcops exports. */
#ifndef HCOPS_H
#define HCOPS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, "major.minor.patch". */
const char *hcops_version(void);

/* Writes what hcops-info shows: version, CPU features and chosen kernel,
 * topology, the packing workspaces the engine has made so far, the partition
 * for an m x n x k SGEMM, the underlying BLAS, and the environment in effect.
 * m, n or k <= 0 omits the partition. */
void hcops_print_info(FILE *out, long m, long n, long k);

/* The GEMM kernel families this CPU can run and HCOPS_ISA allows, in the
 * order the engine prefers them, one name per line ("avx512\navx2\ngeneric\n").
 * Any of them is a valid HCOPS_ISA value. The string is static. */
const char *hcops_kernel_families(void);

/* Path of the underlying BLAS, the library (OpenBLAS) that non-GEMM
 * routines are forwarded to, resolving it now if needed; NULL when none could
 * be loaded. hcops_reference_blas is its earlier name. */
const char *hcops_underlying_blas(void);
const char *hcops_reference_blas(void) __attribute__((deprecated("use hcops_underlying_blas")));

/* ---- libhcops_mem.so: memory placement (see doc/memory.md) ----
 * These are exported by libhcops_mem.so, the allocation interposer; link it
 * (-lhcops_mem) or find them with dlsym when it is preloaded. */
#define HCOPS_MEM_THREAD 0  /* the calling thread only */
#define HCOPS_MEM_PROCESS 1 /* every thread without a policy of its own */

/* Pushes a placement policy, in the syntax of HCOPS_MEM_POLICY (e.g.
 * "fast,thp" or "2M-:fast,thp;64K-2M:local"), for allocations made from now
 * on. A thread's pushed policies come before the process's, which come before
 * HCOPS_MEM_POLICY. 0, or -1 with errno EINVAL: a malformed policy (the
 * error and its position are printed), NULL, or an unknown scope. */
int hcops_mem_push(int scope, const char *policy);
/* Drops the last policy pushed in that scope. 0, or -1 (EINVAL) if none. */
int hcops_mem_pop(int scope);

/* Migrates the pages of [addr, addr + len) to `target` ("fast", "ddr",
 * "local", "interleave[:nodes]", "bind:nodes") and keeps that policy for the
 * range. 0, or -1 with errno. */
int hcops_mem_move(void *addr, size_t len, const char *target);
/* The same on a helper thread pinned to HCOPS_MEM_HELPER_CORE (default: the
 * last CPU of the process's affinity): returns a ticket > 0 for
 * hcops_mem_wait(), or -1 with errno. */
long hcops_mem_move_async(void *addr, size_t len, const char *target);
/* Waits for an asynchronous move: its result, 0 or -1 with errno. */
int hcops_mem_wait(long ticket);

/* A counter of the large allocations (those libhcops_mem serves) by name;
 * (size_t)-1 for an unknown name. Sizes are bytes mapped.
 *   "live"                     bytes in live blocks
 *   "peak"                     the highest live bytes so far
 *   "allocations", "frees"     blocks handed out (reuse included) and freed
 *   "fast_in_use"              live bytes on the fast tier (HCOPS_MEM_FAST_LIMIT)
 *   "fallback.hugetlb_to_thp"  hugetlb wanted, none to be had: THP instead
 *   "fallback.thp_to_base"     huge pages wanted, THP unavailable: base pages
 *   "fallback.fast_to_ddr"     fast wanted, full or over the limit: local DDR
 *   "fallback.to_glibc"        left to glibc: too large, arena full, map failed
 *   "system_rule"              left to glibc by a rule of placement system
 *   "policy_refused"           NUMA policy refused by the kernel: first touch
 *   "cache_hits"               blocks handed out again from the reuse cache
 *   "cached"                   bytes of freed blocks kept mapped for reuse
 *   "cache_evictions.cap"      cached blocks unmapped to keep the cache within
 *                              HCOPS_MEM_CACHE or its bound relative to live
 *   "cache_evictions.decay"    cached blocks unmapped, unused for
 *                              HCOPS_MEM_CACHE_DECAY seconds
 *   "threshold"                the smallest size served (HCOPS_MEM_THRESHOLD)
 *   "fast_capacity"            bytes of the fast node that `fast` places on for
 *                              the calling thread's domain (hwloc's local
 *                              memory; 0 without a fast tier)
 *   "fast_limit"               HCOPS_MEM_FAST_LIMIT in bytes, 0 when unset
 *   "bytes.<thp|hugetlb|base>" bytes handed out with that page kind, cumulative
 *   "bytes.<thp|hugetlb|base>.node<N>"  the same aimed at node N, 0 to 63
 *                              (63 counts every node from 63 on)
 * Each name in double quotes here is answered (tests/mem/test_mem_counters). */
size_t hcops_mem_stat(const char *name);
/* Writes the configuration (threshold, policy, fast nodes) and statistics. */
void hcops_mem_print_info(FILE *out);

#ifdef __cplusplus
}
#endif
#endif
