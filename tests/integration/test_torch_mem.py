#!/usr/bin/env python3
"""Unmodified PyTorch training a DiT under both HCOps libraries preloaded.

  HCOPS_LIB=/abs/libhcops.so HCOPS_MEM_LIB=/abs/libhcops_mem.so $PYTHON tests/integration/test_torch_mem.py

A child (this script with --child) runs DiT training steps (perf/dit/dit.py's
model, as perf/dit/dit.py's run() does) under LD_PRELOAD="$HCOPS_LIB
$HCOPS_MEM_LIB", then reports where its parameters above the 1 MiB
threshold live: their address and the AnonHugePages of their mapping in
/proc/self/smaps. The parent checks that the losses match a second child
without any preload (to the tolerance of test_torch.py: the GEMMs differ)
and are bit for bit those of a third with libhcops.so alone (same GEMMs:
the allocator must not change a single bit), that those parameters are 2 MiB-aligned blocks of
libhcops_mem, the ones of 2 MiB and more backed by transparent huge pages (and, where THP is in madvise mode, that the same
parameters are not without the library), and that neither child printed an
"hcops:" warning.

The model has DiT-S's width with one block: the tiny DiT of test_torch.py
has no parameter above the 1 MiB threshold, and a huge page needs a 2 MiB
block.

Exit status: 0 all passed, 1 something failed, 77 torch missing (skip),
99 no HCOPS_LIB / HCOPS_MEM_LIB.
"""
import ctypes
import math
import os
import sys

import harness
from harness import emit

try:
    import torch
except ImportError as e:  # the parent turns this into an automake skip
    torch, TORCH_IMPORT_ERROR = None, e

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "dit"))
THREADS = 2
LOSS_RTOL = 1e-4  # as test_torch.py: HCOps' GEMMs round differently from OpenBLAS's
HIDDEN, DEPTH, HEADS = 384, 1, 6
# Zero-initialised DiT output makes the first steps' losses nearly independent
# of the weights; after five, a damaged tensor shows (as in test_torch.py).
BATCH, STEPS, SEED = 1, 5, 0
THRESHOLD = 1 << 20  # libhcops_mem's default
HUGE_PAGE = 2 << 20
MIN_HUGE_PARAMS = 3  # adaLN modulation, MLP in and out: the parameters of 2 MiB and more


# ---------------------------------------------------------------- child side

def smaps_vma(addr):
    """The fields of the /proc/self/smaps mapping holding addr: {"range": "lo-hi", "AnonHugePages": kB, ...}."""
    fields, inside = {}, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                if inside:
                    break
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
                if inside:
                    fields["range"] = head
            elif inside:
                key, _, value = line.partition(":")
                parts = value.split()
                if parts and parts[0].isdigit():
                    fields[key] = int(parts[0])
    return fields


def mem_stat(name):
    """hcops_mem_stat(name) from the preloaded library, None when it is not there."""
    try:
        fn = ctypes.CDLL(None).hcops_mem_stat
    except AttributeError:
        return None
    fn.restype, fn.argtypes = ctypes.c_size_t, [ctypes.c_char_p]
    return fn(name.encode())


def child(mode):
    from dit import DiT, alphas_cumprod, make_batch, train_step
    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    model = DiT(HIDDEN, DEPTH, HEADS)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    gen = torch.Generator().manual_seed(SEED)
    abar = alphas_cumprod()
    emit({"start": "dit"})
    losses = [train_step(model, opt, abar, make_batch(gen, BATCH)) for _ in range(STEPS)]
    emit({"dit_losses": losses})
    # After the steps: the parameters have been written (so faulted in) by
    # the initialisation and the optimizer.
    params = [(n, p) for n, p in model.named_parameters() if p.numel() * p.element_size() >= THRESHOLD]
    for name, p in params:
        addr = p.data_ptr()
        vma = smaps_vma(addr)
        emit({"param": name, "bytes": p.numel() * p.element_size(), "addr": addr,
              "vma": vma.get("range"), "anon_huge_kb": vma.get("AnonHugePages", -1)})
    emit({"mem_allocations": mem_stat("allocations"), "mode": mode})
    return 0


# --------------------------------------------------------------- parent side

def rel_diff(x, y):
    """Relative difference; infinite when either is NaN/inf, so a NaN loss can never agree."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.inf
    return abs(x - y) / max(abs(x), abs(y), 1e-30)


def records(res, key):
    return [r for r in res["records"] if key in r]


def thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
        return text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        return "unknown"


def losses(res):
    return next((r["dit_losses"] for r in records(res, "dit_losses")), None)


def check_losses(report, pre, plain, gemm_only):
    lp, lq, lg = losses(pre), losses(plain), losses(gemm_only)
    if lp is None or lq is None or len(lp) != len(lq) or len(lp) != STEPS:
        report.check(False, "DiT: losses with and without the preload agree", f"losses {lp} vs {lq}")
    else:
        rel = max(rel_diff(x, y) for x, y in zip(lp, lq))
        report.check(rel <= LOSS_RTOL, f"DiT: {len(lp)} steps' losses with and without the preload agree",
                     f"max rel diff {rel:.2e}, limit {LOSS_RTOL:g}; preloaded {lp}, plain {lq}")
    report.check(lp is not None and lp == lg and all(map(math.isfinite, lp)),
                 "DiT: losses with libhcops_mem added are bit for bit those with libhcops.so alone",
                 f"both {lp}, libhcops.so alone {lg}")


def check_placement(report, pre, plain):
    params = records(pre, "param")
    huge = [p for p in params if p["bytes"] >= HUGE_PAGE]
    report.check(len(huge) >= MIN_HUGE_PARAMS, f"at least {MIN_HUGE_PARAMS} parameters of 2 MiB or more",
                 ", ".join(f"{p['param']} {p['bytes']}" for p in params))
    for p in params:  # every parameter above the threshold
        report.check(p["addr"] % HUGE_PAGE == 0, f"{p['param']}: a 2 MiB-aligned libhcops_mem block",
                     f"data_ptr {p['addr']:#x}")
    if os.environ.get("HCOPS_TEST_EMULATED") == "yes":
        # QEMU's user-mode emulation (make check-aarch64) takes madvise as a
        # hint it drops: the pages are the emulator's mappings, not the library's.
        print("NOTE: under QEMU user-mode emulation, which ignores madvise, huge pages are not checked")
    else:
        for p in huge:  # those that can hold a huge page
            report.check(p["anon_huge_kb"] > 0, f"{p['param']}: its mapping has transparent huge pages",
                         f"AnonHugePages {p['anon_huge_kb']} kB in {p['vma']}")
    stats = next(iter(records(pre, "mem_allocations")), {})
    report.check((stats.get("mem_allocations") or 0) > 0, "libhcops_mem served large allocations",
                 f"hcops_mem_stat(\"allocations\") = {stats.get('mem_allocations')}")
    # Without the library, THP in madvise mode gives these tensors none: the
    # huge pages above are the library's doing.
    if thp_mode() == "madvise":
        plain_params = [p for p in records(plain, "param") if p["bytes"] >= HUGE_PAGE]
        with_huge = [p["param"] for p in plain_params if p["anon_huge_kb"] != 0]
        report.check(plain_params and not with_huge, "without the preload the same parameters have no huge pages",
                     f"with huge pages: {with_huge}" if with_huge else "")
    else:
        print(f"NOTE: THP mode '{thp_mode()}': the check without the preload is left out")


def check_quiet(report, pre, plain):
    """Only HCOPS_VERBOSE's GEMM lines may come from the libraries: no warning, no error."""
    calls, _ = harness.verbose_gemms(pre["stderr"])
    report.check(sum(calls.values()) > 0, "preloaded: GEMMs ran in HCOps (verbose lines present)",
                 f"{sum(calls.values())} lines")
    for label, res in (("preloaded", pre), ("non-preloaded", plain)):
        noisy = [s for s in res["stdout"] + res["stderr"] if s.startswith("hcops") and
                 not s.startswith("hcops_verbose,")]
        report.check(not noisy, f"{label}: no 'hcops' warnings or errors",
                     f"{len(noisy)} lines, first: {noisy[0]!r}" if noisy else "")
    # One node, no HBM: HCOPS_VERBOSE hears once that 'fast' means DDR here.
    said = [s for s in pre["stderr"] if s.startswith("hcops_verbose,info,libhcops_mem: no high-bandwidth")]
    report.check(len(said) == 1, "preloaded: 'fast' without a fast tier is said once, when verbose",
                 f"{len(said)} lines")


def main():
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2])
    if torch is None:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {TORCH_IMPORT_ERROR}")
        return 77
    lib = harness.library_or_exit()
    mem = os.environ.get("HCOPS_MEM_LIB")
    if not mem or not os.path.isfile(mem):
        print(f"ERROR: HCOPS_MEM_LIB must name the libhcops_mem.so to test (got {mem!r})")
        return 99
    report = harness.Report()
    pre = harness.run_child(__file__, ["preload"], f"{lib} {os.path.abspath(mem)}", THREADS)
    plain = harness.run_child(__file__, ["plain"], None, THREADS)
    gemm_only = harness.run_child(__file__, ["gemm-only"], lib, THREADS)
    harness.check_completed(report, "preloaded", pre)
    harness.check_completed(report, "non-preloaded", plain)
    harness.check_completed(report, "libhcops.so-only", gemm_only)
    check_losses(report, pre, plain, gemm_only)
    check_placement(report, pre, plain)
    check_quiet(report, pre, plain)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
