"""The fused Adam/AdamW step (hcops.torch.optim, torch.ops.hcops.adam_step_)
against stock PyTorch 1.13 in the same process (stock = PyTorch's own
torch.optim.adam.adam / adamw.adamw, put back by optim.uninstall()).

usage: test_adam.py <libhcops_torch.so> [--threads N] [--tolerance] [--quick]
  (--quick: largest tensor 40009 elements, HCOPS_OPS/HCOPS_VERBOSE children not run)
  100 steps of every Adam/AdamW x amsgrad x maximize x weight_decay x
  (lr, betas, eps) combination on shapes 0, 1, odd, 2-D, 3-D and ~1M: bitwise
  equal to stock, or within 1e-6 (normwise relative) with --tolerance (a
  family without FMA); bf16 parameters against an f64 reference step by step
  (bound below); state_dict round trips both ways; the fallbacks run
  PyTorch's code (call counter) with stock results.
"""
import copy
import os
import subprocess
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)
optim = None  # hcops.torch.optim, imported by main() once HCOPS_TORCH_LIB names the library

SHAPES = [(0,), (1,), (7,), (33, 17), (5, 3, 129), (1000003,)]
# --quick and the bf16 test: the large tensor smaller, still split in two (the op's grain is 32768).
QUICK_SHAPES = SHAPES[:-1] + [(40009,)]
SETTINGS = [dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8), dict(lr=3e-2, betas=(0.8, 0.95), eps=1e-6)]
STEPS = 100
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def make_params(dtype=torch.float32, seed=0, shapes=None):
    shapes = shapes or SHAPES
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=g).to(dtype)) for s in shapes]


def bases(params, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2 * p.numel() + 1, generator=g).to(p.dtype) for p in params]


def set_grads(params, base, step):
    # Cheap (no allocation), deterministic, and dependent on the parameters so trajectories matter.
    for p, b in zip(params, base):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        k = step * 7 % (p.numel() + 1)
        p.grad.copy_(b[k:k + p.numel()].view(p.shape)).add_(p.detach(), alpha=0.5)


def run(cls, kw, params, steps, base, start=0, opt=None):
    opt = opt or cls(params, **kw)
    for s in range(start, start + steps):
        set_grads(params, base, s)
        opt.step()
    return opt


def compare(what, got, want, tolerance):
    """Parameters and optimizer state, bitwise or within 1e-6 normwise relative."""
    worst = 0.0
    for a, b in zip(got, want):
        if a.shape != b.shape or a.dtype != b.dtype:
            fail("%s: %s %s vs %s %s" % (what, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
            return
        if torch.equal(a, b) or a.numel() == 0:
            continue
        if not tolerance:
            n = int((a != b).sum())
            fail("%s: %d of %d elements differ from stock (bitwise expected)" % (what, n, a.numel()))
            return
        err = float((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30))
        worst = max(worst, err)
    if worst > 1e-6:
        fail("%s: relative error %.3g > 1e-6" % (what, worst))


def tensors_of(params, opt):
    out = [p.detach() for p in params]
    for p in params:
        st = opt.state[p]
        out += [st[k] for k in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq") if k in st]
    return out


def trajectory(cls, kw, fused, dtype=torch.float32):
    (optim.install if fused else optim.uninstall)()
    params = make_params(dtype)
    opt = run(cls, kw, params, STEPS, bases(params))
    return tensors_of(params, opt)


def test_matrix(tolerance):
    """Every option combination, 100 steps, against stock."""
    n = 0
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        for amsgrad in (False, True):
            for maximize in (False, True):
                for wd in (0.0, 0.01):
                    for setting in SETTINGS:
                        kw = dict(setting, amsgrad=amsgrad, maximize=maximize, weight_decay=wd)
                        before = dict(optim.calls)
                        got = trajectory(cls, kw, True)
                        key = cls.__name__.lower() + ":fused"
                        if optim.calls.get(key, 0) - before.get(key, 0) != STEPS:
                            fail("%s %s: the fused path did not take every step" % (cls.__name__, kw))
                        want = trajectory(cls, kw, False)
                        compare("%s %s" % (cls.__name__, kw), got, want, tolerance)
                        n += 1
    print("matrix: %d combinations x %d steps compared (%s)" % (n, STEPS, "tolerance 1e-6" if tolerance else "bitwise"))


def adam_reference(p, g, m, v, vmax, step, kw, adamw):
    """One step in f64 from the same (bf16) state; also the magnitudes of each result's terms."""
    lr, (b1, b2), eps, wd = kw["lr"], kw["betas"], kw["eps"], kw["weight_decay"]
    p, g, m, v = p.double(), g.double(), m.double(), v.double()
    if kw["maximize"]:
        g = -g
    g_terms = g.abs()
    if not adamw and wd != 0:
        g = g + wd * p
        g_terms = g_terms + (wd * p).abs()
    if adamw:
        p = p * (1 - lr * wd)
    m_terms = (m * b1).abs() + g_terms * (1 - b1)
    v_terms = (v * b2).abs() + g_terms * g_terms * (1 - b2)
    m = m * b1 + (1 - b1) * g
    v = v * b2 + (1 - b2) * g * g
    vm = torch.maximum(vmax.double(), v) if vmax is not None else v
    step_size = lr / (1 - b1**step)
    denom = vm.sqrt() / (1 - b2**step) ** 0.5 + eps
    upd = -step_size * m / denom
    p_terms = p.abs() + step_size * m_terms / denom
    return dict(p=(p + upd, p_terms), m=(m, m_terms), v=(v, v_terms), vmax=(vm, torch.maximum(v_terms, vmax.double().abs()) if vmax is not None else v_terms))


def test_bf16():
    """bf16 tensors: each step's results within 2^-8 |ref| + 2^-20 (sum of |terms|) of an f64 step from the
    same bf16 state (f32 arithmetic, one rounding to bf16 on store)."""
    optim.install()
    worst = 0.0
    for cls, adamw in ((torch.optim.Adam, False), (torch.optim.AdamW, True)):
        for amsgrad in (False, True):
            kw = dict(SETTINGS[1], amsgrad=amsgrad, maximize=amsgrad, weight_decay=0.01)
            params = make_params(torch.bfloat16, shapes=QUICK_SHAPES)
            base = bases(params)
            opt = cls(params, **kw)
            before = optim.calls.get(cls.__name__.lower() + ":fused", 0)
            for s in range(STEPS):
                set_grads(params, base, s)
                olds = []
                for p in params:
                    st = opt.state[p]
                    z = torch.zeros_like(p)
                    olds.append((p.detach().clone(), p.grad.clone(), st.get("exp_avg", z).clone(),
                                 st.get("exp_avg_sq", z).clone(), st.get("max_exp_avg_sq", z).clone() if amsgrad else None))
                opt.step()
                for p, (p0, g0, m0, v0, vmax0) in zip(params, olds):
                    st = opt.state[p]
                    ref = adam_reference(p0, g0, m0, v0, vmax0, float(st["step"]), kw, adamw)
                    got = dict(p=p.detach(), m=st["exp_avg"], v=st["exp_avg_sq"])
                    if amsgrad:
                        got["vmax"] = st["max_exp_avg_sq"]
                    for k, y in got.items():
                        if y.dtype != torch.bfloat16:
                            fail("bf16 %s: %s became %s" % (cls.__name__, k, y.dtype))
                        r, terms = ref[k]
                        if not y.numel():
                            continue
                        err = (y.double() - r).abs()
                        bound = 2.0**-8 * r.abs() + 2.0**-20 * terms
                        if not bool((err <= bound).all()):
                            fail("bf16 %s amsgrad=%s step %d %s: error %.3g above its bound" %
                                 (cls.__name__, amsgrad, s, k, float((err - bound).max())))
                            return
                        worst = max(worst, float((err / (r.abs() + terms).clamp_min(1e-30)).max()))
            if optim.calls.get(cls.__name__.lower() + ":fused", 0) - before != STEPS:
                fail("bf16 %s: the fused path did not take every step" % cls.__name__)
    print("bf16: within 2^-8|ref| + 2^-20 terms at every step; worst error / (|ref| + terms) = %.3g" % worst)


def test_state_dict(tolerance):
    """hcops -> stock -> continue and stock -> hcops -> continue equal an all-stock run."""
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        kw = dict(SETTINGS[0], amsgrad=True, maximize=False, weight_decay=0.01)
        optim.uninstall()
        params = make_params()
        base = bases(params)
        stock = run(cls, kw, params, STEPS, base)
        want = tensors_of(params, stock)
        for first, second in ((True, False), (False, True)):
            (optim.install if first else optim.uninstall)()
            params = make_params()
            opt = run(cls, kw, params, STEPS // 2, base)
            sd = copy.deepcopy(opt.state_dict())
            params2 = [torch.nn.Parameter(p.detach().clone()) for p in params]
            opt2 = cls(params2, **kw)
            opt2.load_state_dict(sd)
            (optim.install if second else optim.uninstall)()
            run(cls, kw, params2, STEPS - STEPS // 2, base, start=STEPS // 2, opt=opt2)
            compare("state_dict %s %s" % (cls.__name__, "hcops->stock" if first else "stock->hcops"),
                    tensors_of(params2, opt2), want, tolerance)
            a, b = opt2.state_dict(), stock.state_dict()
            if a["param_groups"] != b["param_groups"] or sorted(a["state"]) != sorted(b["state"]) or any(
                    sorted(a["state"][k]) != sorted(b["state"][k]) for k in a["state"]):
                fail("state_dict %s: keys or groups differ from stock's" % cls.__name__)
    print("state_dict: round trips both ways equal the all-stock run")


def fallback_case(name, cls, kw, dtype=torch.float32, make=None, expect_error=False):
    """The case runs PyTorch's function (counted as fallback, never fused) and gives stock's result."""
    results = []
    for fused in (True, False):
        (optim.install if fused else optim.uninstall)()
        params = make() if make else make_params(dtype, shapes=[(7,), (33, 17)])
        base = bases(params)
        before = dict(optim.calls)
        try:
            opt = run(cls, kw, params, 5, base)
            results.append(tensors_of(params, opt))
        except Exception as e:  # stock's own error, which the fallback must reproduce
            results.append(repr(e))
        delta = {k: optim.calls.get(k, 0) - before.get(k, 0) for k in optim.calls}
        if fused and (delta.get(cls.__name__.lower() + ":fused", 0) or
                      (not expect_error and delta.get(cls.__name__.lower() + ":fallback", 0) != 5)):
            fail("fallback %s: calls %s (expected 5 fallbacks, no fused call)" % (name, delta))
    if isinstance(results[0], str) or isinstance(results[1], str):
        if results[0] != results[1] or not expect_error:
            fail("fallback %s: %s vs stock %s" % (name, results[0], results[1]))
    else:
        compare("fallback " + name, results[0], results[1], False)
    print("fallback %s: PyTorch's code ran, stock result%s" % (name, " (same error)" if expect_error else ""))


def differentiable_params():
    """Non-leaf parameters that keep their grad, as differentiable optimizers take them."""
    out = []
    for p in make_params(shapes=[(7,), (33, 17)]):
        q = p.detach().requires_grad_().clone()
        q.retain_grad()
        out.append(q)
    return out


def test_fallbacks():
    base = dict(SETTINGS[0], weight_decay=0.01)
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        fallback_case(cls.__name__ + " foreach=True", cls, dict(base, foreach=True))
        fallback_case(cls.__name__ + " complex", cls, base, dtype=torch.complex64)
        fallback_case(cls.__name__ + " float64", cls, base, dtype=torch.float64)
        fallback_case(cls.__name__ + " mixed f32/bf16", cls, base,
                      make=lambda: [make_params(shapes=[(9,)])[0], make_params(torch.bfloat16, 1, [(9,)])[0]])
        fallback_case(cls.__name__ + " non-contiguous", cls, base,
                      make=lambda: [torch.nn.Parameter(make_params(shapes=[(8, 6)])[0].detach().t())])
        fallback_case(cls.__name__ + " capturable (CUDA only: stock's error)", cls, dict(base, capturable=True),
                      expect_error=True)
    fallback_case("Adam differentiable", torch.optim.Adam, dict(base, differentiable=True), make=differentiable_params)
    print("fallback sparse: skipped: Adam.step and AdamW.step reject sparse gradients before calling adam()/adamw()")


def test_version_counter():
    """A step between a forward and its backward makes the backward fail, as with stock PyTorch
    (the in-place updates bump the parameters' version counters), instead of running on new values."""
    for fused in (False, True):
        (optim.install if fused else optim.uninstall)()
        for cls in (torch.optim.Adam, torch.optim.AdamW):
            w = torch.nn.Parameter(torch.randn(64, 64))
            w.grad = torch.randn(64, 64)
            x = torch.randn(8, 64, requires_grad=True)
            loss = (x @ w).square().sum()  # saves w for x's gradient
            before = optim.calls.get(cls.__name__.lower() + ":fused", 0)
            cls([w], lr=0.1).step()
            took = optim.calls.get(cls.__name__.lower() + ":fused", 0) - before
            if took != int(fused):
                fail("version counter %s fused=%s: %d fused steps" % (cls.__name__, fused, took))
            try:
                loss.backward()
                fail("%s %s: backward after an in-place step did not raise" % (cls.__name__, "fused" if fused else "stock"))
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    fail("%s: unexpected error %s" % (cls.__name__, e))
    optim.install()
    print("version counters: a backward after a fused step fails as after a stock one")


def versions(params, opt):
    """The version counter of every parameter and state tensor, in a fixed order."""
    out = []
    for p in params:
        out.append(p._version)
        st = opt.state[p]
        out += [st[k]._version for k in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq") if k in st]
    return out


def test_version_counts():
    """Each step bumps every tensor's version counter as often as stock's in-place updates do
    (AdamW's param.mul_ and addcdiv_ twice, Adam's once; exp_avg and exp_avg_sq twice; max once)."""
    for cls in (torch.optim.Adam, torch.optim.AdamW):
        for kw in (dict(weight_decay=0.0), dict(weight_decay=0.1), dict(weight_decay=0.1, amsgrad=True)):
            got = []
            for fused in (True, False):
                (optim.install if fused else optim.uninstall)()
                params = make_params(shapes=[(7,), (33, 17)])
                opt = run(cls, dict(SETTINGS[0], **kw), params, 2, bases(params))
                got.append(versions(params, opt))
            if got[0] != got[1]:
                fail("version counts %s %s: fused %s, stock %s" % (cls.__name__, kw, got[0], got[1]))
    optim.install()
    print("version counts: every tensor bumped as often as by stock's step")


def test_aliased_grad():
    """A gradient that is its parameter (the functional adam/adamw called on a tensor and itself) takes
    PyTorch's function, which decays the parameter before reading it as the gradient, with the reason
    counted; the result is stock's."""
    results = {}
    for fused in (True, False):
        (optim.install if fused else optim.uninstall)()
        for name in ("adam", "adamw"):
            fn = getattr(sys.modules["torch.optim." + name], name)
            p = make_params(shapes=[(257,)])[0].detach()
            m, v, step = torch.zeros_like(p), torch.zeros_like(p), torch.zeros(())
            before = optim.calls.get(name + ":fallback", 0)
            with torch.no_grad():
                fn([p], [p], [m], [v], [], [step], amsgrad=False, beta1=0.9, beta2=0.99, lr=0.1, weight_decay=0.5,
                   eps=1e-8, maximize=False)
            if fused and optim.calls.get(name + ":fallback", 0) != before + 1:
                fail("aliased %s: not left to PyTorch's function (calls %s)" % (name, optim.calls))
            results[(name, fused)] = [p.clone(), m.clone(), v.clone()]
    for name in ("adam", "adamw"):
        compare("aliased " + name, results[(name, True)], results[(name, False)], False)
    optim.install()
    print("aliased gradient: PyTorch's order, stock result")


def test_repeated_param():
    """A parameter listed twice in a group (tied weights; PyTorch warns, and
    keeps one state for it) and a parameter whose storage another one views:
    PyTorch updates them in turn, so the group takes PyTorch's function, the
    reason counted; the result is stock's."""
    results = {}
    for fused in (True, False):
        (optim.install if fused else optim.uninstall)()
        for cls in (torch.optim.Adam, torch.optim.AdamW):
            for layout in ("twice", "view"):
                p, q = make_params(shapes=[(129,), (33,)])
                if layout == "twice":
                    params = [p, q, p]
                else:  # a second leaf on part of p's memory
                    params = [p, q, torch.nn.Parameter(p.data[64:])]
                name = cls.__name__.lower()
                before = optim.calls.get(name + ":fallback", 0)
                with warnings.catch_warnings():  # "optimizer contains a parameter group with duplicate parameters"
                    warnings.simplefilter("ignore")
                    opt = cls(params, lr=0.1, weight_decay=0.1)
                for step in range(3):
                    for t in params:
                        t.grad = torch.full_like(t, 0.5 + step) * torch.linspace(-1, 1, t.numel())
                    opt.step()
                if fused and optim.calls.get(name + ":fallback", 0) != before + 3:
                    fail("%s %s parameter: not left to PyTorch's function (calls %s)" % (name, layout, optim.calls))
                results[(name, layout, fused)] = [p.detach().clone(), q.detach().clone()]
    for name in ("adam", "adamw"):
        for layout in ("twice", "view"):
            compare("%s %s parameter" % (name, layout), results[(name, layout, True)],
                    results[(name, layout, False)], False)
    optim.install()
    print("a parameter twice in a group, or viewed by another: PyTorch's order, stock result")


CHILD = """
import sys, torch
sys.path.insert(0, %r)
import hcops.torch
from hcops.torch import optim
p = torch.nn.Parameter(torch.ones(40000))
p.grad = torch.ones(40000)
for cls in (torch.optim.Adam, torch.optim.AdamW):
    cls([p], lr=0.1).step()
torch.optim.AdamW([p], lr=0.1, foreach=True).step()
print(sorted(optim.calls.items()))
"""


def child(env_extra):
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-c", CHILD % PYTHON_DIR], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        fail("child %s: exit %d: %s" % (env_extra, r.returncode, r.stderr[-2000:]))
    return r.stdout.strip(), r.stderr


def test_selection_and_verbose():
    """import hcops.torch installs what HCOPS_OPS selects; HCOPS_VERBOSE=1 shows each fused step and
    each group left to PyTorch with its reason."""
    both = "[('adam:fused', 1), ('adamw:fallback', 1), ('adamw:fused', 1)]"
    cases = [({}, both, False), ({"HCOPS_OPS": "adamw,gelu"}, "[('adamw:fallback', 1), ('adamw:fused', 1)]", False),
             ({"HCOPS_OPS": "none"}, "[]", False), ({"HCOPS_OPS": "adam,bogus"}, both, True)]
    for env, want, warns in cases:
        out, err = child(dict(env, HCOPS_VERBOSE="0"))
        if out != want or warns != ("HCOPS_OPS" in err):
            fail("HCOPS_OPS=%r: calls %s, expected %s; stderr %r" % (env.get("HCOPS_OPS"), out, want, err))
    out, err = child({"HCOPS_VERBOSE": "2"})
    lines = [line for line in err.splitlines() if line.startswith("hcops_verbose,exec,adam_step_,f32,1 tensors 40000")]
    declined = [line for line in err.splitlines() if line.startswith("hcops_verbose,fallback,adam_step_,")]
    summary = [line for line in err.splitlines() if line.startswith("hcops_verbose,summary,adam_step_,2,")]
    if len(lines) != 2 or "adamw amsgrad=0" not in lines[1] or len(summary) != 1 or not summary[0].endswith(
            ",1,foreach:1"):
        fail("HCOPS_VERBOSE=2: expected two adam_step_ lines and a summary with one fallback, got %r" % err)
    if declined != ["hcops_verbose,fallback,adam_step_,float32,1 tensors adamw,foreach"]:
        fail("HCOPS_VERBOSE=2: expected the foreach step's fallback line, got %r" % declined)
    print("selection and verbose: HCOPS_OPS honoured, bad value warns and means all; %s; %s" %
          (lines[1] if lines else "no line", declined[0] if declined else "no fallback line"))


def main():
    global optim
    args = sys.argv[1:]
    os.environ["HCOPS_TORCH_LIB"] = args[0]
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 1
    tolerance = "--tolerance" in args
    if "--quick" in args:
        SHAPES[:] = QUICK_SHAPES
    from hcops.torch import optim as module
    optim = module
    torch.set_num_threads(threads)
    print("torch %s, %d threads, HCOPS_ISA=%s, largest tensor %d" %
          (torch.__version__, torch.get_num_threads(), os.environ.get("HCOPS_ISA", ""), SHAPES[-1][0]), flush=True)
    if optim.install() != ["adam", "adamw"] or optim.install() != ["adam", "adamw"]:
        fail("install() did not install adam and adamw (twice)")
    if sys.modules["torch.optim.adam"].adam.hcops_original.__module__ != "torch.optim.adam":
        fail("install() is not idempotent: it wrapped its own function")
    if "--quick" in args:
        # Five child interpreters (26 s under a 2.x wheel); what they check does not depend
        # on the operator family or the thread count, so the full run alone does it.
        print("selection and verbose: checked by the full run only")
    else:
        test_selection_and_verbose()
    test_matrix(tolerance)
    test_bf16()
    test_state_dict(tolerance)
    test_fallbacks()
    test_version_counter()
    test_version_counts()
    test_aliased_grad()
    test_repeated_param()
    optim.uninstall()
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
