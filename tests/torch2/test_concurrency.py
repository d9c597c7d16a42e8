"""HCOps' PyTorch 2.x kernels called concurrently (issue 49): the results
must be the serial ones, bit for bit, and nothing may hang.

One workload (every operator group HCOps registers: mm, addmm with bias,
bmm, matmul, LayerNorm forward and backward, softmax, GeLU, SiLU, attention
forward and backward, sums over leading dimensions; f32 and bf16) is computed once serially; then again
- from 4 Python threads at once, each several times (an inference server's
  request threads: every thread calls ATen, which runs its own OpenMP team);
- from torch.jit.fork tasks (inter-op threads);
- with torch.set_num_threads changed between rounds (1, 2, 1, 2) and,
  in 2 threads at once, before every operator of a round;
- in DataLoader workers forked after HCOps has run in the parent (each
  worker's own HCOps calls, on the one thread PyTorch gives a worker; fork
  start method).
Each result is compared with the serial one (torch.equal: HCOps' sums do not
depend on which thread computes which block), and HCOps' call counters must
show it computed each operator. The driver (main) runs the checks in a child with a
time limit, so a deadlock is a failure with a message, not a hung `make
check`. Prints "N passed, M failed".
"""
import os
import subprocess
import sys
import threading
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(1, os.path.join(HERE, ".."))  # time_limits
import time_limits  # noqa: E402
TIME_LIMIT = time_limits.limit(600)  # seconds for the whole child; a hang is reported, not waited out


def workload(torch, seed):
    """The inputs of one workload, and a function computing every output of it."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(seed)

    def r(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)
    cases = []
    for dt in (torch.float32, torch.bfloat16):
        a, b, bias = r(96, 80, dtype=dt), r(80, 72, dtype=dt), r(72, dtype=dt)
        w = r(72, 80, dtype=dt)  # nn.Linear's weight, used transposed
        ba, bb = r(6, 40, 24, dtype=dt), r(6, 24, 36, dtype=dt)
        x, lw, lb, dy = r(8, 33, 64, dtype=dt), r(64, dtype=dt), r(64, dtype=dt), r(8, 33, 64, dtype=dt)
        q, k, v, do = (r(2, 3, 40, 16, dtype=dt) for _ in range(4))
        xs = r(8, 64, 128, dtype=dt)  # sums: at least the 32768 elements HCOps takes
        cases.append((dt, a, b, bias, w, ba, bb, x, lw, lb, dy, q, k, v, do, xs))

    def steps():
        """The workload as a list of calls, each returning its outputs."""
        calls = []
        for dt, a, b, bias, w, ba, bb, x, lw, lb, dy, q, k, v, do, xs in cases:
            calls += [lambda a=a, b=b: [torch.mm(a, b)], lambda a=a, w=w, bias=bias: [torch.addmm(bias, a, w.t())],
                      lambda ba=ba, bb=bb: [torch.bmm(ba, bb), torch.matmul(ba, bb)]]

            def layer_norm(x=x, lw=lw, lb=lb, dy=dy):
                xr = x.clone().requires_grad_()
                y = F.layer_norm(xr, (64,), lw, lb, 1e-5)
                y.backward(dy)
                return [y.detach(), xr.grad]

            def attention(q=q, k=k, v=v, do=do):
                qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
                o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
                o.backward(do)
                return [o.detach(), qr.grad, kr.grad, vr.grad]
            calls += [layer_norm, lambda x=x: [torch.softmax(x, -1)], lambda x=x: [F.gelu(x)],
                      lambda x=x: [F.gelu(x, approximate="tanh")], lambda x=x: [F.silu(x)], attention,
                      lambda xs=xs: [xs.sum(1, keepdim=True), xs.view(-1, 128).sum(0)]]
        return calls

    def compute(between=None):
        """Every output; between(i) runs before call i (thread count changes)."""
        out = []
        for i, call in enumerate(steps()):
            if between:
                between(i)
            out += call()
        return out
    return compute


# The aten operators the workload reaches and HCOps computes.
COUNTED = ("mm", "addmm", "bmm", "native_layer_norm", "native_layer_norm_backward", "_softmax", "gelu", "silu",
           "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward", "sum")


def same_outputs(got, want):
    import torch
    return len(got) == len(want) and all(
        g.dtype == w.dtype and g.shape == w.shape and torch.equal(g, w) for g, w in zip(got, want))


class DataLoaderCase:
    """A dataset whose items are HCOps' results, computed in the workers."""

    def __init__(self, torch, seeds):
        self.torch, self.seeds = torch, seeds

    def __len__(self):
        return len(self.seeds)

    def __getitem__(self, i):
        import hcops.torch as ht
        # On the one thread PyTorch's worker loop sets (an OpenMP team in a
        # child forked from a parent that ran one is what it avoids): HCOps'
        # calls take their inline path here.
        before = {op: ht.call_counts(op)[0] for op in COUNTED}
        out = workload(self.torch, self.seeds[i])()
        taken = {op: ht.call_counts(op)[0] - before[op] for op in COUNTED}
        return os.getpid(), min(taken.values()), out


def child():
    import torch
    import hcops.torch as ht
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    def taken():
        """Calls HCOps computed so far, per operator."""
        return {op: ht.call_counts(op)[0] for op in COUNTED}

    def fewest_since(before):
        """The fewest calls any counted operator computed since `before`."""
        now = taken()
        return min(now[op] - before[op] for op in COUNTED)

    torch.set_num_threads(2)
    seeds = [11, 12, 13, 14]
    serial = {s: workload(torch, s)() for s in seeds}
    before = taken()
    again = workload(torch, seeds[0])()
    check(fewest_since(before) >= 1, "HCOps computed each operator of the workload (the fewest: %d calls)" %
          fewest_since(before))
    check(same_outputs(again, serial[seeds[0]]), "serial results are repeatable")

    # Python threads, each computing every workload several times.
    results, errors = [], []

    def thread_body(tid):
        try:
            for rep in range(3):
                s = seeds[(tid + rep) % len(seeds)]
                results.append((s, workload(torch, s)()))
        except Exception as e:  # reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=thread_body, args=(t,)) for t in range(4)]
    before = taken()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "4 Python threads: no error %s" % errors[:1])
    bad = [s for s, out in results if not same_outputs(out, serial[s])]
    check(len(results) == 12 and not bad, "4 Python threads x 3 workloads: %d results, %d differ from serial" % (
        len(results), len(bad)))
    check(fewest_since(before) >= 12, "HCOps computed each operator in every thread's workloads (the fewest: %d)" %
          fewest_since(before))

    # torch.jit.fork tasks (the inter-op pool).
    computes = {s: workload(torch, s) for s in seeds}
    with warnings.catch_warnings():  # 2.x calls fork deprecated; it is what TorchScript users run
        warnings.simplefilter("ignore", FutureWarning)
        futures = [(s, torch.jit.fork(computes[s])) for s in seeds]
        bad = [s for s, f in futures if not same_outputs(torch.jit.wait(f), serial[s])]
    check(not bad, "torch.jit.fork, %d tasks: %d differ from serial" % (len(futures), len(bad)))

    # torch.set_num_threads between rounds, and from another thread during them.
    bad = []
    for n in (1, 2, 1, 2):
        torch.set_num_threads(n)
        bad += [(n, s) for s in seeds if not same_outputs(computes[s](), serial[s])]
    check(not bad, "set_num_threads 1, 2, 1, 2 between rounds: %d results differ" % len(bad))
    # During the rounds: each of 2 threads changes its own thread count (a
    # per-thread setting under OpenMP) before every operator.
    results, errors = [], []

    def flipping(tid):
        try:
            for rep in range(2):
                s = seeds[(tid + rep) % len(seeds)]
                results.append((s, computes[s](lambda i: torch.set_num_threads(1 + (i + tid) % 2))))
        except Exception as e:  # reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=flipping, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.set_num_threads(2)
    bad = [s for s, out in results if not same_outputs(out, serial[s])]
    check(not errors and len(results) == 4 and not bad,
          "set_num_threads 1, 2, ... before every operator, in 2 threads at once: %d results, %d differ %s" % (
              len(results), len(bad), errors[:1]))

    # DataLoader workers forked after HCOps has run here.
    loader = torch.utils.data.DataLoader(DataLoaderCase(torch, seeds), batch_size=None, num_workers=2,
                                         multiprocessing_context="fork")
    items = list(loader)
    pids = {pid for pid, _, _ in items}
    bad = [s for s, (_, _, out) in zip(seeds, items) if not same_outputs(out, serial[s])]
    low = [n for _, n, _ in items if n < 1]  # an operator the worker did not compute
    check(len(items) == len(seeds) and os.getpid() not in pids and not bad and not low,
          "DataLoader, 2 forked workers: %d items from %d workers, %d differ from serial, %d with an operator HCOps did not compute"
          % (len(items), len(pids), len(bad), len(low)))
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    if not os.path.isfile(os.environ.get("HCOPS_TORCH_LIB", "")):
        print("SKIP: no libhcops_torch2.so (HCOPS_TORCH_LIB)")
        return 77
    try:
        return subprocess.run([sys.executable, __file__, "--child"], timeout=TIME_LIMIT).returncode
    except subprocess.TimeoutExpired:
        print("FAIL: the concurrent calls did not finish in %d s (a deadlock?)" % TIME_LIMIT)
        return 1


if __name__ == "__main__":
    sys.exit(main())
