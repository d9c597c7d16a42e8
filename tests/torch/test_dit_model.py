"""perf/dit/dit.py is DiT as its authors wrote it (no HCOps involved here):

- the variational-bound term against an independent float64 computation
  (numpy: the schedule, the posterior, the Gaussian KL in closed form and the
  discretized Gaussian decoder likelihood) at t = 0, 1, 500 and 999;
- the mean is frozen in that term: the loss's gradient on the model's epsilon
  half is the MSE's alone, and the variance half gets one;
- learn sigma: the output has twice the latent channels;
- the Conv2d patch embedding is the Linear over flattened patches (the
  gemm-only variant) with the same weights;
- DiT-S/2 has the parameters the authors' model has (33.0M: counted from
  their structure, the fixed position embedding included as they keep it as
  a parameter), and the AdamW of the runs is lr 1e-4, no weight decay.
"""
import math
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "perf", "dit"))
import dit  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# ---- the reference, in float64 numpy, written from the paper's formulas ----
def ref_tables():
    betas = np.linspace(1e-4, 0.02, 1000, dtype=np.float64)
    alphas = 1 - betas
    abar = np.cumprod(alphas)
    abar_prev = np.append(1.0, abar[:-1])
    post_var = betas * (1 - abar_prev) / (1 - abar)
    post_logvar = np.log(np.append(post_var[1], post_var[1:]))
    c1 = betas * np.sqrt(abar_prev) / (1 - abar)
    c2 = (1 - abar_prev) * np.sqrt(alphas) / (1 - abar)
    return betas, abar, post_logvar, c1, c2


def ref_cdf(x):
    return 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def ref_vb(x0, x_t, t, eps, v):
    betas, abar, post_logvar, c1, c2 = ref_tables()
    out = []
    for i in range(x0.shape[0]):
        ti = t[i]
        frac = (v[i] + 1) / 2
        logvar = frac * np.log(betas[ti]) + (1 - frac) * post_logvar[ti]
        x0_pred = x_t[i] / np.sqrt(abar[ti]) - np.sqrt(1 / abar[ti] - 1) * eps[i]
        mean_model = c1[ti] * x0_pred + c2[ti] * x_t[i]
        mean_true = c1[ti] * x0[i] + c2[ti] * x_t[i]
        if ti > 0:
            lv1, lv2 = post_logvar[ti], logvar
            kl = 0.5 * (-1 + lv2 - lv1 + np.exp(lv1 - lv2) + (mean_true - mean_model) ** 2 * np.exp(-lv2))
            out.append(kl.mean() / np.log(2))
        else:
            inv = np.exp(-0.5 * logvar)
            cen = x0[i] - mean_model
            plus, minus = ref_cdf(inv * (cen + 1 / 255)), ref_cdf(inv * (cen - 1 / 255))
            logp = np.where(x0[i] < -0.999, np.log(np.maximum(plus, 1e-12)),
                            np.where(x0[i] > 0.999, np.log(np.maximum(1 - minus, 1e-12)),
                                     np.log(np.maximum(plus - minus, 1e-12))))
            out.append(-logp.mean() / np.log(2))
    return np.array(out)


def test_vb():
    g = torch.Generator().manual_seed(7)
    shape = (4, dit.LATENT_CHANNELS, 8, 8)
    for t_val in (0, 1, 500, 999):
        t = torch.full((4,), t_val, dtype=torch.long)
        # x0 spans the decoder's edges (beyond +-0.999) as well as its inside.
        x0 = torch.rand(shape, generator=g) * 2.4 - 1.2
        x_t = torch.randn(shape, generator=g)
        eps = torch.randn(shape, generator=g)
        v = torch.rand(shape, generator=g) * 2 - 1
        want = ref_vb(*(a.double().numpy() for a in (x0, x_t)), t.numpy(), eps.double().numpy(), v.double().numpy())
        # The formula: run in float64 (the tables' values rounded to float32, as the model takes them), it must
        # agree to float32's rounding of those values.
        got64 = dit.vb_terms_bits(x0.double(), x_t.double(), t, eps.double(), v.double()).numpy()
        rel64 = np.max(np.abs(got64 - want) / np.maximum(np.abs(want), 1e-3))
        check(np.all(np.isfinite(got64)) and rel64 < 1e-5,
              f"VB term at t={t_val}, float64 inputs, against the float64 reference ({got64[0]:.6g} bits, "
              f"rel err {rel64:.2e})")
        # As the model computes it, in float32: at t = 0 the decoder's likelihood is a difference of two
        # normal CDF values 2/255 apart on a scale of sqrt(beta_1) ~ 0.01, each rounded to 6e-8, so its log
        # loses up to ~1e-7 / (cdf_plus - cdf_min) relative per element: 2e-2 on these inputs; elsewhere 2e-4.
        got = dit.vb_terms_bits(x0, x_t, t, eps, v).double().numpy()
        rel = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3))
        bound = 2e-2 if t_val == 0 else 2e-4
        check(np.all(np.isfinite(got)) and rel < bound, f"VB term at t={t_val}, float32, against float64 "
              f"(rel err {rel:.2e}, bound {bound:g})")


class Fixed(torch.nn.Module):
    """A 'model' whose output is a leaf: its gradient is the loss's on the output."""

    variant = "dit"

    def __init__(self, out):
        super().__init__()
        self.out = torch.nn.Parameter(out)

    def forward(self, x, t, y):
        return self.out


def test_frozen_mean():
    g = torch.Generator().manual_seed(3)
    batch = dit.make_batch(g, 3)
    out = torch.randn(3, 2 * dit.LATENT_CHANNELS, dit.LATENT_SIZE, dit.LATENT_SIZE, generator=g)
    m = Fixed(out.clone())
    dit.diffusion_loss(m, dit.alphas_cumprod(), batch).backward()
    grad = m.out.grad
    x0, y, t, noise = batch
    eps = out[:, :dit.LATENT_CHANNELS].clone().requires_grad_()
    dit.mean_flat((noise - eps) ** 2).mean().backward()
    check(torch.allclose(grad[:, :dit.LATENT_CHANNELS], eps.grad, rtol=1e-6, atol=1e-12),
          "the VB term leaves the epsilon half's gradient to the MSE (mean frozen)")
    check(grad[:, dit.LATENT_CHANNELS:].abs().sum() > 0, "the variance half gets a gradient from the VB term")


def test_model():
    torch.manual_seed(0)
    model = dit.DiT(*dit.CONFIGS["tiny"])
    x = torch.randn(2, dit.LATENT_CHANNELS, dit.LATENT_SIZE, dit.LATENT_SIZE)
    out = model(x, torch.tensor([3, 900]), torch.tensor([1, 2]))
    check(tuple(out.shape) == (2, 2 * dit.LATENT_CHANNELS, dit.LATENT_SIZE, dit.LATENT_SIZE),
          f"learn sigma: output {tuple(out.shape)}")
    check(isinstance(model.x_embedder.proj, torch.nn.Conv2d) and model.x_embedder.proj.stride == (dit.PATCH,) * 2,
          "patch embedding is a Conv2d of stride patch")
    w, b = model.x_embedder.proj.weight, model.x_embedder.proj.bias
    with torch.no_grad():
        w.normal_()
        b.normal_()
        conv = model.x_embedder(x)
        lin = torch.nn.functional.linear(model.patchify(x), w.reshape(w.shape[0], -1), b)
    err = (conv - lin).abs().max().item()
    check(err < 1e-4, f"the Conv2d patch embedding equals the Linear over flattened patches (max diff {err:.1e})")


def test_parameters():
    h, depth, _ = dit.CONFIGS["S"]
    c, p, grid = dit.LATENT_CHANNELS, dit.PATCH, dit.LATENT_SIZE // dit.PATCH
    lin = lambda i, o: i * o + o  # noqa: E731
    block = lin(h, 3 * h) + lin(h, h) + lin(h, 4 * h) + lin(4 * h, h) + lin(h, 6 * h)
    authors = (c * p * p * h + h  # x_embedder
               + lin(256, h) + lin(h, h)  # t_embedder
               + (dit.NUM_CLASSES + 1) * h  # y_embedder, with the cfg class
               + grid * grid * h  # pos_embed, a frozen nn.Parameter in their code
               + depth * block + lin(h, 2 * h) + lin(h, p * p * 2 * c))
    model = dit.DiT(*dit.CONFIGS["S"])
    ours = sum(q.numel() for q in model.parameters()) + model.pos_embed.numel()
    check(ours == authors, f"DiT-S/2 parameters {ours:,} = the authors' {authors:,}")
    check(round(authors / 1e6, 1) == 33.0, f"DiT-S/2 is the paper's 33M ({authors / 1e6:.2f}M)")


def test_step_costs():
    """run() reports each measured step's CPU time and page faults beside its
    wall time (what tells a step that faults its memory in again)."""
    res = dit.run("tiny", 2, steps=2, warmup=1, threads=1, seed=0)
    costs = res["step_costs"]
    check(len(costs) == len(res["step_times"]) == 2, f"one cost per measured step: {costs}")
    for c in costs:
        check(set(c) == {"user_s", "system_s", "minor_faults", "major_faults"}, f"cost fields: {sorted(c)}")
        check(c["user_s"] >= 0 and c["system_s"] >= 0, f"CPU times not negative: {c}")
        check(isinstance(c["minor_faults"], int) and c["minor_faults"] >= 0 and c["major_faults"] >= 0,
              f"fault counts are counts: {c}")
        check(c["user_s"] + c["system_s"] > 0, f"a step costs some CPU time: {c}")


test_vb()
test_frozen_mean()
test_model()
test_parameters()
test_step_costs()
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
