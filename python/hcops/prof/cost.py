"""What a record computes or moves, from its shape, so its time reads as
GFLOPS or GB/s.

GEMMs: 2·m·n·k flops (real types). oneDNN matmul: 2·(batch)·M·N·K, from the
problem "B..xMxK:B..xKxN:B..xMxN" (broadcast batch dims taken from dst);
inner product: 2·mb·oc·(ic·spatial) from "mb8ic384oc1536" (spatial kh/kw...
multiplied in); convolution: 2·mb·g·(oc/g)·(ic/g)·kh·kw·oh·ow (+ d). Other
primitives and the operators: bytes, counted as STREAM counts them (each
tensor read or written once; no write-allocate): an elementwise forward
reads x and writes y (2 tensors), a backward reads the gradient and x or y
and writes the input gradient (3); softmax and layer norm the same (their
per-row statistics are small and left out); AdamW reads param, grad, m, v
and writes param, m, v (7 f32 tensors of the elements). MPI: bytes the call
reduces (not a bandwidth claim of the network). Attention (the CPU flash
kernel HCOps runs) is flops: 4 B H L S E forward, 10 B H L S E backward."""
import re

DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8, "s8": 1, "u8": 1, "s32": 4}
BACKWARD_TENSORS = 3
FORWARD_TENSORS = 2
ADAM_TENSORS = 7


def ints(text):
    return [int(x) for x in re.findall(r"\d+", text)]


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def matmul_flops(problem):
    """oneDNN 2.x gives src:wei:dst, 3.x src:wei; batch dims broadcast."""
    parts = problem.split(":")
    if len(parts) not in (2, 3):
        return 0.0
    src, wei = parts[0].split("x"), parts[1].split("x")
    try:
        m, k, n = int(src[-2]), int(src[-1]), int(wei[-1])
        bs, bw = [int(x) for x in src[:-2]], [int(x) for x in wei[:-2]]
    except (ValueError, IndexError):
        return 0.0  # runtime dims ("*") or an unknown form
    width = max(len(bs), len(bw))
    bs, bw = [1] * (width - len(bs)) + bs, [1] * (width - len(bw)) + bw
    return 2.0 * _prod(max(a, b) for a, b in zip(bs, bw)) * m * n * k


def _named(problem):
    """{"mb": 8, "ic": 384, ...} of oneDNN's problem descriptor form."""
    return {k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", problem)}


def ip_flops(problem):
    d = _named(problem)
    if not {"mb", "ic", "oc"} <= d.keys():
        return 0.0
    spatial = _prod(d.get(x, 1) for x in ("id", "ih", "iw"))
    return 2.0 * d["mb"] * d["oc"] * d["ic"] * spatial


def conv_flops(problem):
    d = _named(problem)
    if not {"mb", "ic", "oc"} <= d.keys():
        return 0.0
    g = d.get("g", 1)
    out = _prod(d.get(x, 1) for x in ("od", "oh", "ow"))
    kern = _prod(d.get(x, 1) for x in ("kd", "kh", "kw"))
    return 2.0 * d["mb"] * (d["oc"] // g) * g * (d["ic"] // g) * kern * out


# Attention (B x H x L x E queries, S keys): the forward's two products are 4
# B H L S E flops; the backward's four, with the scores recomputed, 10 B H L
# S E (as torchtrace.py counts them).
ATTENTION_FLOPS = {"_scaled_dot_product_flash_attention_for_cpu": 4,
                   "_scaled_dot_product_flash_attention_for_cpu_backward": 10}


def attention_flops(name, shape, keys):
    d = ints(shape)
    if len(d) < 4:
        return 0.0
    b, h, l, e = d[:4]
    return float(ATTENTION_FLOPS[name] * b * h * l * (keys or l) * e)


def operator_bytes(name, dtype, shape):
    size = DTYPE_BYTES.get(dtype, 4)
    if name.startswith("adam"):
        m = re.search(r"(\d+) elements", shape)
        return float(ADAM_TENSORS * 4 * int(m.group(1))) if m else 0.0
    elems = _prod(ints(shape)) if ints(shape) else 0
    tensors = BACKWARD_TENSORS if "backward" in name else FORWARD_TENSORS
    return float(tensors * size * elems)


def work(rec):
    """("flops", n) or ("bytes", n) of one call of rec; n = 0 when unknown."""
    if rec.part == "gemm":
        return "flops", gemm_flops(rec.dims["m"], rec.dims["n"], rec.dims["k"])
    if rec.part == "dnnl":
        if rec.name == "matmul":
            return "flops", matmul_flops(rec.dims["problem"])
        if rec.name == "inner_product":
            return "flops", ip_flops(rec.dims["problem"])
        if rec.name in ("convolution", "deconvolution"):
            return "flops", conv_flops(rec.dims["problem"])
        return "bytes", 0.0
    if rec.part == "operator":
        if rec.name in ATTENTION_FLOPS:
            return "flops", attention_flops(rec.name, rec.dims.get("shape", rec.shape), rec.dims.get("keys"))
        return "bytes", operator_bytes(rec.name, rec.dtype, rec.shape)
    if rec.part == "mpi":
        return "bytes", float(rec.dims["bytes"])
    return "bytes", 0.0
