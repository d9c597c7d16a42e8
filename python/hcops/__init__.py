"""HCOps from Python. `hcops.mem`: the phase API of libhcops_mem.so."""
