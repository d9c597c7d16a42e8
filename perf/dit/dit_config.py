"""DiT's configurations and the GEMM work of one training step: what the model
(dit.py) builds and what the benchmarks divide their step times by. No torch
import, so that drivers running under any Python can read it."""

CONFIGS = {  # name: (hidden size, depth, heads)
    "tiny": (64, 2, 2),
    "mini": (384, 2, 6),  # DiT-S's blocks, 2 of them: its operator shapes at a sixth of the step (tests)
    "S": (384, 12, 6),
    "B": (768, 12, 12),
    "L": (1024, 24, 16),
    "XL": (1152, 28, 16),
}
LATENT_CHANNELS = 4
LATENT_SIZE = 32
PATCH = 2
TOKENS = (LATENT_SIZE // PATCH) ** 2


def step_flops(model, batch, tokens=TOKENS):
    """Forward + backward GEMM flops of a DiT step (3x the forward's): per block
    qkv, proj, the two MLP layers (4x hidden), adaLN (6 hidden x hidden on one
    token), and attention's two batched products."""
    h, depth, _ = CONFIGS[model]
    per_block = 2 * tokens * (3 * h * h + h * h + 8 * h * h) + 2 * 6 * h * h + 2 * 2 * tokens * tokens * h
    return 3 * batch * depth * per_block
