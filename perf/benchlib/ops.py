"""The operators perf/ops_bench.py measures, shared with its PyTorch child
(perf/ops_worker.py): their names, the DiT shapes they run on, the bytes each
call moves (the memory bound) and the tolerance of the result checks."""
import collections
import math

ELTWISE = ("gelu_tanh", "gelu_erf", "silu")        # on the MLP's hidden activations
SOFTMAX = ("softmax", "log_softmax")               # over the attention scores' last dimension
LAYER_NORM = ("layer_norm", "layer_norm_affine")   # DiT's (no affine), and with weight and bias
OPS = ELTWISE + SOFTMAX + LAYER_NORM
ADAMW = "adamw"
DIRS = ("fwd", "bwd")
DTYPES = ("f32", "bf16")
DTYPE_BYTES = {"f32": 4, "bf16": 2}
LN_EPS = 1e-6  # DiT's nn.LayerNorm(eps=1e-6); hcops-dnnl-ops uses the same

# DiT-S/2 and DiT-XL/2 at 256x256 images (32x32 latents, patch 2: 256 tokens);
# batch 8 and 2, the batches of perf/dit and perf/workloads.
Model = collections.namedtuple("Model", "batch tokens hidden mlp heads")
MODELS = {
    "S": Model(batch=8, tokens=256, hidden=384, mlp=1536, heads=6),
    "XL": Model(batch=2, tokens=256, hidden=1152, mlp=4608, heads=16),
}
# The AdamW step runs over the parameters of perf/dit's DiT-S/2 (its "tiny"
# under --quick); perf/dit has no XL.
# Bytes a fused step moves per parameter: read p, g, m, v; write p, m, v.
ADAMW_BYTES = {"f32": 28, "bf16": 14}


class Case(collections.namedtuple("Case", "model op dir dtype threads")):
    """One measured configuration: an operator, forward or backward, on one
    model's shape, in one datatype, on a number of threads."""

    @property
    def dims(self):
        return shape(self.op, MODELS[self.model])

    @property
    def label(self):
        return "AdamW step" if self.op == ADAMW else f"{self.model} {self.op} {self.dir}"

    def dims_text(self):
        return "x".join(map(str, self.dims))


def shape(op, m):
    """The tensor op runs on in model m: GeLU/SiLU on the MLP's hidden layer,
    softmax on the attention scores, LayerNorm on the residual stream."""
    if op in ELTWISE:
        return (m.batch, m.tokens, m.mlp)
    if op in SOFTMAX:
        return (m.batch, m.heads, m.tokens, m.tokens)
    if op in LAYER_NORM:
        return (m.batch, m.tokens, m.hidden)
    raise ValueError(op)


def bytes_moved(op, direction, dims, dtype):
    """What one call must read and write at the least, each tensor once:
    forward reads x and writes y; backward reads dy and x (softmax: its saved
    output) and writes dx. LayerNorm adds its per-row statistics (written
    forward, read backward; in the data's type, as PyTorch keeps them) and the
    affine parameters (read; their gradients written backward)."""
    s = DTYPE_BYTES[dtype]
    n = math.prod(dims)
    cols, rows = dims[-1], n // dims[-1]
    total = (2 if direction == "fwd" else 3) * n * s
    if op in LAYER_NORM:
        total += 2 * rows * s
        if op == "layer_norm_affine":
            total += (2 if direction == "fwd" else 3) * cols * s
    return total


def tolerance(dtype):
    """(rtol, atol) of a result against the reference computed in f32 from the
    same inputs: |got - ref| <= rtol |ref| + atol max(1, max|ref|), as
    hcops-dnnl-ops --selftest. bf16: one rounding of the result plus a unit in
    the last place."""
    return (1e-5, 1e-5) if dtype == "f32" else (2.0 ** -7, 2.0 ** -8)
