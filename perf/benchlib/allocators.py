"""The allocators compared with libhcops_mem.so (preloaded, like it)."""
from .build import MULTIARCH
from .child import child_env

MEMTIER = f"{MULTIARCH}/libmemtier.so.0"  # memkind's interposer (Debian libmemkind0)
# libmemtier aborts without a POLICY entry, even for a single tier.
MEMTIER_ENV = {"MEMKIND_MEM_TIERS": "KIND:DRAM,RATIO:1;POLICY:STATIC_RATIO"}
# What would change an allocator from the caller's environment.
ALLOCATOR_VARS = ("HCOPS_MEM_", "MEMKIND_", "GLIBC_TUNABLES", "MALLOC_")


def allocator_env(preloads, threads=None, **extra):
    """A child's environment with only the given allocator settings: preloads (a
    list of libraries), extra, and none of the caller's."""
    env = child_env(threads, drop=ALLOCATOR_VARS, **extra)
    if preloads:
        env["LD_PRELOAD"] = ":".join(preloads)
    return env
