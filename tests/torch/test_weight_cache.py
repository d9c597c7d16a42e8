"""A weight's packed panels kept between calls (HCOPS_WEIGHT_CACHE,
src/gemm/packed_a_cache.h) through the dispatcher, as models use weights:
nn.Linear and x @ W in a forward under torch.no_grad() and inference_mode,
f32 and bf16. Every result is checked against an f64 product of the
operands as they are at that call, and a cached result must equal the
first (packed) one bit for bit. A weight written in place must never be
served stale, whichever way it is written: in place under no_grad (the
version counter changes), through .data and through a numpy view (it does
not: the content check catches them), a new tensor assigned to .data,
load_state_dict; each result also bit for bit the product on the detached
(untagged) weight. A weight written after every product is not packed whole
again. Under HCOPS_VERBOSE each product's line says what the cache
did (a=cached, a=repacked-new-version, ...); the products it must leave alone say
nothing: a training forward and its backward, frozen weights
(requires_grad False), products of two activations, batched products.
PyTorch 1.13 (libhcops_torch.so) has no cache: no line may mention it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbose_child import run_child, run_test  # noqa: E402


def parent():
    p = run_child(__file__, 900, drop=("HCOPS_WEIGHT_CACHE",))
    sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines() if not l.startswith("EXPECT ")))
    if p.returncode != 0:
        sys.stdout.write(p.stderr[-4000:])
        print(f"FAIL: the child exited {p.returncode}")
        return 1
    import torch
    major = int(torch.__version__.split(".")[0])
    # Each MARK line names the product that follows it; its verbose exec line
    # says what the cache did.
    seen, failed, mark = {}, 0, None
    for line in p.stderr.splitlines():
        if line.startswith("MARK "):
            mark = line[5:]
            seen[mark] = []
        elif line.split(",")[2:3] in (["aten::mm"], ["aten::addmm"], ["aten::bmm"], ["aten::baddbmm"]) \
                and line.startswith("hcops_verbose,exec,") and mark is not None:
            a = [f for f in line.split(" ") if f.startswith("a=")]
            seen[mark].append(a[0][2:] if a else "-")
    expected = [l.split("=", 1) for l in p.stdout.splitlines() if l.startswith("EXPECT ")]
    for name, want in ((e[0][7:], e[1]) for e in expected):
        got = seen.get(name, [])
        want_now = want if major >= 2 else "-"
        if not got or any(g != want_now for g in got):
            print(f"FAIL: {name}: the cache said {got or 'nothing (no HCOps GEMM line)'}, expected {want_now}")
            failed += 1
    if major < 2 and " a=" in p.stderr:
        print("FAIL: PyTorch 1.13 has no weight cache, yet a line mentions it")
        failed += 1
    print(f"{len(expected) - failed} of {len(expected)} products did what the cache should")
    return 1 if failed else 0


def child():
    import numpy as np
    import torch
    import hcops.torch as ht  # noqa: F401 (loads the library)

    torch.manual_seed(7)
    failures = 0

    def mark(name, want):
        # The verbose line of the product comes on stderr after the mark.
        print(f"EXPECT {name}={want}", flush=True)
        print(f"MARK {name}", file=sys.stderr, flush=True)

    def check(name, got, x, w, b=None, transposed=True):
        nonlocal failures
        ref = x.double() @ (w.double().t() if transposed else w.double())
        if b is not None:
            ref = ref + b.double()
        k = x.shape[-1]
        if got.dtype == torch.float32:
            tol = 16 * k * 2.0 ** -24 * (x.double().abs() @ (w.double().abs().t() if transposed else w.double().abs()))
        else:
            tol = 2 * 2.0 ** -8 * torch.maximum(ref.abs(), x.double().abs() @ (w.double().abs().t() if transposed
                                                                                   else w.double().abs())) + 1e-30
        if b is not None:
            tol = tol + b.double().abs() * 2.0 ** -20
        bad = ((got.double() - ref).abs() > tol).sum().item()
        if bad:
            print(f"FAIL: {name}: {bad} elements off the f64 product of the weight as it is now")
            failures += 1

    def same(name, x, y):
        nonlocal failures
        if not torch.equal(x, y):
            print(f"FAIL: {name}: not bit for bit the same as the first result")
            failures += 1

    def uncached(lin, x, label):
        # The same product on the detached weight (requires no grad: never tagged).
        mark(f"{label} (detached)", "-")
        b = lin.bias.detach() if lin.bias is not None else None
        return torch.nn.functional.linear(x, lin.weight.detach(), b)

    def twice(name, lin, x, want):
        """The product after a write: what the cache did, then read back."""
        for label, w in ((name, want), (name + ", again", "cached")):
            mark(f"{label}", w)
            y = lin(x)
            check(label, y, x, lin.weight, lin.bias)
            same(label, y, uncached(lin, x, label))

    for dt in (torch.float32, torch.bfloat16):
        tag = "f32" if dt == torch.float32 else "bf16"
        lin = torch.nn.Linear(384, 1536).to(dt)
        x = torch.randn(256, 384, dtype=dt)
        with torch.no_grad():
            mark(f"{tag} first", "packed-kept")
            y0 = lin(x)
            check(f"{tag} first", y0, x, lin.weight, lin.bias)
            same(f"{tag} first", y0, uncached(lin, x, f"{tag} first"))
            for i in range(3):
                mark(f"{tag} again {i}", "cached")
                same(f"{tag} again {i}", lin(x), y0)
            with torch.inference_mode():
                mark(f"{tag} inference_mode", "cached")
                same(f"{tag} inference_mode", lin(x), y0)
            # Written through .data: the version counter does not see it.
            lin.weight.data[5, 7] += 1
            twice(f"{tag} .data write", lin, x, "repacked-contents-changed")
            # In place under no_grad: the version changes.
            lin.weight.mul_(0.5)
            twice(f"{tag} no_grad write", lin, x, "repacked-new-version")
            # Through a numpy view of the same memory (f32 only: numpy has no bf16).
            if dt == torch.float32:
                lin.weight.detach().numpy()[100, :] = 0.25
                twice(f"{tag} numpy write", lin, x, "repacked-contents-changed")
            # One bit of one element, through .data.
            v = lin.weight.data.view(torch.int16 if dt == torch.bfloat16 else torch.int32)
            v[1535, 383] ^= 1
            twice(f"{tag} one bit", lin, x, "repacked-contents-changed")
            # A new tensor assigned to .data: another storage.
            lin.weight.data = torch.randn(1536, 384, dtype=dt)
            twice(f"{tag} new .data", lin, x, "packed-kept")
            # load_state_dict copies in place (a new version).
            other = torch.nn.Linear(384, 1536).to(dt)
            lin.load_state_dict(other.state_dict())
            twice(f"{tag} load_state_dict", lin, x, "repacked-new-version")
            # Written after every product (never read back): not packed whole again.
            mover = torch.nn.Linear(384, 768).to(dt)
            for i, want in enumerate(("packed-kept", "packed-changes-every-call", "packed-changes-every-call")):
                mark(f"{tag} changes every call {i}", want)
                y = mover(x)
                check(f"{tag} changes every call {i}", y, x, mover.weight, mover.bias)
                mover.weight.add_(0.01)
            # x @ W with W a parameter (not transposed).
            w = torch.nn.Parameter(torch.randn(384, 640, dtype=dt))
            mark(f"{tag} x@W first", "packed-kept")
            z0 = x @ w
            check(f"{tag} x@W first", z0, x, w, transposed=False)
            mark(f"{tag} x@W again", "cached")
            same(f"{tag} x@W again", x @ w, z0)
            mark(f"{tag} x@W (detached)", "-")
            same(f"{tag} x@W uncached", z0, x @ w.detach())
            # Left alone: frozen weights, two activations, batched products.
            frozen = torch.nn.Linear(384, 512).to(dt).requires_grad_(False)
            mark(f"{tag} frozen", "-")
            check(f"{tag} frozen", frozen(x), x, frozen.weight, frozen.bias)
            y = torch.randn(384, 300, dtype=dt)
            mark(f"{tag} activations", "-")
            check(f"{tag} activations", x @ y, x, y, transposed=False)
            xb = torch.randn(4, 64, 384, dtype=dt)
            mark(f"{tag} batched", "-")
            torch.bmm(xb, w.unsqueeze(0).expand(4, 384, 640))
        # Training: neither the forward nor its backward is cached.
        xr = x.clone().requires_grad_(True)
        mark(f"{tag} training", "-")
        out = lin(xr)
        out.float().sum().backward()
        check(f"{tag} training", out.detach(), x, lin.weight.detach(), lin.bias.detach())

    # A DiT-like sampling loop in f32: several Linears, 4 steps, each step's
    # output equal to a run with the cache's first (packed) results.
    blocks = torch.nn.Sequential(torch.nn.Linear(384, 1536), torch.nn.GELU(), torch.nn.Linear(1536, 384))
    h = torch.randn(512, 384)
    with torch.no_grad():
        mark("loop first", "packed-kept")
        first = blocks(h)
        for s in range(4):
            mark(f"loop step {s}", "cached")
            same(f"loop step {s}", blocks(h), first)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run_test(parent, child))
