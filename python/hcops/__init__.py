"""HCOps from Python. `hcops.mem`: the phase API of libhcops_mem.so;
`hcops.torch`: the operators of libhcops_torch.so for PyTorch;
`hcops.automem`: per-layer placement between the fast tier and DDR (AutoMem)."""
