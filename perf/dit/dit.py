#!/usr/bin/env python3
"""DiT (Peebles & Xie, "Scalable Diffusion Models with Transformers") training benchmark.

The model as DiT's authors wrote it (facebookresearch/DiT models.py and
diffusion/), in plain torch.nn for torch 1.13:
- patch embedding: timm's PatchEmbed, a Conv2d of kernel = stride = patch;
- blocks: timm's vision_transformer Attention (qkv with bias, q scaled, explicit
  q @ k^T, softmax, @ v: torch 1.13 has no scaled_dot_product_attention) and Mlp
  (fc1, GELU tanh, fc2), with adaLN-Zero modulation, sin-cos position embedding,
  timestep and class-dropout label embedders, the adaLN final layer;
- loss: GaussianDiffusion's training loss with learn_sigma (LEARNED_RANGE
  variance), the linear beta schedule of 1000 steps and loss type MSE: the
  epsilon MSE plus the variational-bound term in bits (the KL of the true
  posterior against the model's, mean frozen; the discretized Gaussian decoder
  NLL at t = 0), averaged over the batch;
- AdamW, lr 1e-4, no weight decay.

--variant gemm-only is the earlier benchmark model: a Linear over flattened
patches instead of the Conv2d (every GEMM of the step then goes through BLAS,
none through oneDNN's convolution) and the epsilon MSE alone.

  $PYTHON dit.py --model S --batch 8 --steps 3 --warmup 1 --threads 2 --seed 0 --json
  $PYTHON dit.py --autocast bf16 ...   # forward and loss under torch.autocast("cpu", bfloat16)
  $PYTHON dit.py --loader-workers 1 ...  # latents from a DataLoader worker's CPU-side augmentation
  $PYTHON dit.py --trace step.json ...   # the last step under torch.profiler: hcops-prof step.json --csv F

--loader-workers N takes each batch's latents from a torch DataLoader with N
worker processes, which prepare every sample on the CPU as DiT's ImageNet
pipeline does before its VAE: an image of ImageNet's mean size (500 x 375,
standing in for a decoded JPEG), ADM's center_crop_arr (box-halved while at
least twice 256, bicubic to 256, centre crop), a random horizontal flip,
scaling to [-1, 1]; the VAE is stood in for by an 8x8 average pool and a
fourth channel (the latents' 4 x 32 x 32). The timesteps and noise stay the
main process's, from the seeded generator, so the loss is the same.
"""
import argparse
import contextlib
import hashlib
import json
import math
import resource
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from dit_config import CONFIGS, LATENT_CHANNELS, LATENT_SIZE, PATCH  # noqa: F401 - re-exported to the tests

VARIANTS = ("dit", "gemm-only")
NUM_CLASSES = 1000
DIFFUSION_STEPS = 1000


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def sincos_1d(dim, pos):
    omega = 1.0 / 10000 ** (torch.arange(dim // 2, dtype=torch.float64) / (dim / 2.0))
    # Broadcast outer product rather than torch.outer/einsum: keeps init off BLAS.
    out = pos.reshape(-1)[:, None] * omega[None, :]
    return torch.cat([torch.sin(out), torch.cos(out)], dim=1)


def sincos_2d(dim, grid_size):
    coords = torch.arange(grid_size, dtype=torch.float64)
    grid_w, grid_h = torch.meshgrid(coords, coords, indexing="xy")  # same order as DiT's numpy code
    return torch.cat([sincos_1d(dim // 2, grid_w), sincos_1d(dim // 2, grid_h)], dim=1)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden, freq_dim=256):
        super().__init__()
        self.freq_dim = freq_dim
        self.mlp = nn.Sequential(nn.Linear(freq_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))

    def forward(self, t):
        half = self.freq_dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class LabelEmbedder(nn.Module):
    """Class embedding; the extra row is the 'null' class used for classifier-free guidance."""

    def __init__(self, hidden, dropout_prob=0.1):
        super().__init__()
        self.table = nn.Embedding(NUM_CLASSES + 1, hidden)
        self.dropout_prob = dropout_prob

    def forward(self, labels):
        if self.training:
            drop = torch.rand(labels.shape[0]) < self.dropout_prob
            labels = torch.where(drop, torch.full_like(labels, NUM_CLASSES), labels)
        return self.table(labels)


class Attention(nn.Module):
    # True: F.scaled_dot_product_attention, as timm's Attention with fused_attn
    # (its default in PyTorch 2.x); False: timm's explicit matmul and softmax.
    fused = False

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.scale = (hidden // heads) ** -0.5
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused:
            out = F.scaled_dot_product_attention(q, k, v)
            return self.proj(out.transpose(1, 2).reshape(b, n, c))
        attn = torch.matmul(q * self.scale, k.transpose(-2, -1))  # timm scales q, then multiplies
        out = torch.matmul(attn.softmax(dim=-1), v)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class DiTBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, 4 * hidden), nn.GELU(approximate="tanh"), nn.Linear(4 * hidden, hidden)
        )
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))


class FinalLayer(nn.Module):
    def __init__(self, hidden, out_channels):
        super().__init__()
        self.norm_final = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden, PATCH * PATCH * out_channels)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class PatchEmbed(nn.Module):
    """timm's PatchEmbed as DiT uses it: a Conv2d of kernel = stride = patch, then
    (B, C, H, W) -> (B, H*W/patch^2, hidden)."""

    def __init__(self, hidden):
        super().__init__()
        self.proj = nn.Conv2d(LATENT_CHANNELS, hidden, kernel_size=PATCH, stride=PATCH, bias=True)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class DiT(nn.Module):
    def __init__(self, hidden, depth, heads, variant="dit"):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant {variant!r}: one of {VARIANTS}")
        self.variant = variant
        self.out_channels = 2 * LATENT_CHANNELS  # learn_sigma=True, as in the paper
        grid = LATENT_SIZE // PATCH
        if variant == "dit":
            self.x_embedder = PatchEmbed(hidden)
        else:  # gemm-only: the same map as one Linear over flattened patches
            self.x_embedder = nn.Linear(LATENT_CHANNELS * PATCH * PATCH, hidden)
        self.t_embedder = TimestepEmbedder(hidden)
        self.y_embedder = LabelEmbedder(hidden)
        self.register_buffer("pos_embed", sincos_2d(hidden, grid).float().unsqueeze(0))
        self.blocks = nn.ModuleList([DiTBlock(hidden, heads) for _ in range(depth)])
        self.final_layer = FinalLayer(hidden, self.out_channels)
        self.initialize_weights()

    def initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        if self.variant == "dit":  # as a Linear: xavier on the weight viewed as 2-D, bias 0
            w = self.x_embedder.proj.weight.data
            nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
            nn.init.zeros_(self.x_embedder.proj.bias)
        nn.init.normal_(self.y_embedder.table.weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[0].weight, std=0.02)
        nn.init.normal_(self.t_embedder.mlp[2].weight, std=0.02)
        # adaLN-Zero: every block starts as the identity and the output as zero.
        for layer in [b.adaLN_modulation[-1] for b in self.blocks] + [
            self.final_layer.adaLN_modulation[-1],
            self.final_layer.linear,
        ]:
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def patchify(self, x):
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // PATCH, PATCH, w // PATCH, PATCH).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, (h // PATCH) * (w // PATCH), c * PATCH * PATCH)

    def unpatchify(self, x):
        b, n, _ = x.shape
        g = int(n**0.5)
        x = x.reshape(b, g, g, PATCH, PATCH, self.out_channels).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, self.out_channels, g * PATCH, g * PATCH)

    def forward(self, x, t, y):
        x = self.x_embedder(x if self.variant == "dit" else self.patchify(x)) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y)
        for block in self.blocks:
            x = block(x, c)
        return self.unpatchify(self.final_layer(x, c))


def alphas_cumprod():
    betas = torch.linspace(1e-4, 0.02, DIFFUSION_STEPS, dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0).float()


class Schedule:
    """The Gaussian diffusion's tables, in float64 as the authors compute them
    (linear betas 1e-4..0.02 over 1000 steps); taken per timestep, then float32."""

    def __init__(self):
        betas = torch.linspace(1e-4, 0.02, DIFFUSION_STEPS, dtype=torch.float64)
        alphas = 1.0 - betas
        abar = torch.cumprod(alphas, dim=0)
        abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), abar[:-1]])
        self.betas = betas
        self.sqrt_abar = abar.sqrt()
        self.sqrt_one_minus_abar = (1.0 - abar).sqrt()
        self.sqrt_recip_abar = (1.0 / abar).sqrt()
        self.sqrt_recipm1_abar = (1.0 / abar - 1.0).sqrt()
        posterior_variance = betas * (1.0 - abar_prev) / (1.0 - abar)
        # log(0) at t = 0: the authors take t = 1's value there.
        self.posterior_log_variance_clipped = torch.log(torch.cat([posterior_variance[1:2], posterior_variance[1:]]))
        self.posterior_mean_coef1 = betas * abar_prev.sqrt() / (1.0 - abar)
        self.posterior_mean_coef2 = (1.0 - abar_prev) * alphas.sqrt() / (1.0 - abar)
        self.log_betas = torch.log(betas)

    @staticmethod
    def at(table, t):
        """table[t] as float32, shaped to broadcast over (B, C, H, W)."""
        return table[t].float().view(-1, 1, 1, 1)


_SCHEDULE = None


def schedule():
    global _SCHEDULE
    if _SCHEDULE is None:
        _SCHEDULE = Schedule()
    return _SCHEDULE


def normal_kl(mean1, logvar1, mean2, logvar2):
    """KL(N(mean1, e^logvar1) || N(mean2, e^logvar2)), elementwise, in nats."""
    return 0.5 * (-1.0 + logvar2 - logvar1 + torch.exp(logvar1 - logvar2) + (mean1 - mean2) ** 2 * torch.exp(-logvar2))


def approx_standard_normal_cdf(x):
    return 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def discretized_gaussian_log_likelihood(x, means, log_scales):
    """log P(x) of data in [-1, 1] quantised to 256 levels, under N(means,
    e^(2 log_scales)); the edges take the tails. Elementwise, in nats."""
    centered = x - means
    inv_stdv = torch.exp(-log_scales)
    cdf_plus = approx_standard_normal_cdf(inv_stdv * (centered + 1.0 / 255.0))
    cdf_min = approx_standard_normal_cdf(inv_stdv * (centered - 1.0 / 255.0))
    log_cdf_plus = torch.log(cdf_plus.clamp(min=1e-12))
    log_one_minus_cdf_min = torch.log((1.0 - cdf_min).clamp(min=1e-12))
    log_cdf_delta = torch.log((cdf_plus - cdf_min).clamp(min=1e-12))
    return torch.where(x < -0.999, log_cdf_plus, torch.where(x > 0.999, log_one_minus_cdf_min, log_cdf_delta))


def mean_flat(x):
    return x.mean(dim=list(range(1, x.dim())))


def vb_terms_bits(x0, x_t, t, eps, var_values):
    """The variational-bound term of each sample, in bits: the KL of the true
    posterior q(x_{t-1} | x_t, x0) against the model's p(x_{t-1} | x_t) at
    t > 0, the decoder's NLL of x0 at t = 0. eps is the model's epsilon (to be
    passed detached: the term trains only the variance), var_values its
    variance half in [-1, 1] interpolating the log variance between the
    posterior's and beta's (LEARNED_RANGE)."""
    sch = schedule()
    at = Schedule.at
    min_log = at(sch.posterior_log_variance_clipped, t)
    max_log = at(sch.log_betas, t)
    frac = (var_values + 1) / 2
    model_log_variance = frac * max_log + (1 - frac) * min_log
    pred_x0 = at(sch.sqrt_recip_abar, t) * x_t - at(sch.sqrt_recipm1_abar, t) * eps
    c1, c2 = at(sch.posterior_mean_coef1, t), at(sch.posterior_mean_coef2, t)
    model_mean = c1 * pred_x0 + c2 * x_t
    true_mean = c1 * x0 + c2 * x_t
    kl = mean_flat(normal_kl(true_mean, min_log, model_mean, model_log_variance)) / math.log(2.0)
    nll = -mean_flat(discretized_gaussian_log_likelihood(x0, model_mean, 0.5 * model_log_variance)) / math.log(2.0)
    return torch.where(t == 0, nll, kl)


def make_batch(gen, batch):
    """Synthetic latents, labels, timesteps and noise, all from one seeded generator."""
    shape = (batch, LATENT_CHANNELS, LATENT_SIZE, LATENT_SIZE)
    x0 = torch.randn(shape, generator=gen)
    y = torch.randint(0, NUM_CLASSES, (batch,), generator=gen)
    t = torch.randint(0, DIFFUSION_STEPS, (batch,), generator=gen)
    noise = torch.randn(shape, generator=gen)
    return x0, y, t, noise


IMAGE_SIZE = 256


class AugmentedImages(torch.utils.data.Dataset):
    """Latents prepared from images on the CPU, one sample per index (its
    own seeded generator: the same sample whichever worker makes it)."""

    def __init__(self, count, seed):
        self.count, self.seed = count, seed

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        gen = torch.Generator().manual_seed(self.seed * 1000003 + i)
        img = torch.randint(0, 256, (1, 3, 375, 500), generator=gen, dtype=torch.uint8).float()
        while min(img.shape[-2:]) >= 2 * IMAGE_SIZE:  # ADM's center_crop_arr: BOX halving, then bicubic
            img = F.avg_pool2d(img, 2)
        scale = IMAGE_SIZE / min(img.shape[-2:])
        size = (round(img.shape[-2] * scale), round(img.shape[-1] * scale))
        img = F.interpolate(img, size=size, mode="bicubic", align_corners=False, antialias=True)
        top, left = (size[0] - IMAGE_SIZE) // 2, (size[1] - IMAGE_SIZE) // 2
        img = img[..., top:top + IMAGE_SIZE, left:left + IMAGE_SIZE]
        if torch.rand((), generator=gen) < 0.5:
            img = img.flip(-1)
        img = (img.clamp(0, 255) / 127.5 - 1).squeeze(0)
        lat = F.avg_pool2d(img, IMAGE_SIZE // LATENT_SIZE)  # the VAE's stand-in: 3 x 32 x 32
        x0 = torch.cat([lat, lat.mean(0, keepdim=True)]) * 4
        y = int(torch.randint(0, NUM_CLASSES, (), generator=gen))
        return x0.contiguous(), y


def loader_batches(batch, count, workers, seed):
    """Batches of (x0, y) from a DataLoader of `workers` processes."""
    data = AugmentedImages(count * batch, seed)
    return iter(torch.utils.data.DataLoader(data, batch_size=batch, num_workers=workers, persistent_workers=True,
                                            prefetch_factor=2))


def diffusion_loss(model, abar, batch):
    """The training loss of the batch, noised to its timesteps. DiT: the
    epsilon MSE plus the variational-bound term (the authors' learn-sigma
    loss, x_t from the float64 tables); gemm-only: the epsilon MSE alone,
    x_t from abar (float32)."""
    x0, y, t, noise = batch
    if getattr(model, "variant", "dit") != "dit":
        a = abar[t].view(-1, 1, 1, 1)
        x_t = a.sqrt() * x0 + (1 - a).sqrt() * noise
        eps = model(x_t, t, y)[:, :LATENT_CHANNELS]
        return torch.mean((eps - noise) ** 2)
    sch = schedule()
    x_t = Schedule.at(sch.sqrt_abar, t) * x0 + Schedule.at(sch.sqrt_one_minus_abar, t) * noise
    out = model(x_t, t, y)
    eps, var_values = out[:, :LATENT_CHANNELS], out[:, LATENT_CHANNELS:]
    mse = mean_flat((noise - eps) ** 2)
    # The mean frozen: the bound trains the variance only, the MSE the mean.
    vb = vb_terms_bits(x0, x_t, t, eps.detach().float(), var_values.float())
    return (mse + vb).mean()


AUTOCAST = {"none": None, "bf16": torch.bfloat16}


def autocast(name):
    """The forward's context: mixed precision as torch.autocast does it on CPU
    (parameters, gradients and optimizer stay fp32), or nothing."""
    dtype = AUTOCAST[name]
    return torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()


def train_step(model, opt, abar, batch, amp="none"):
    with autocast(amp):
        loss = diffusion_loss(model, abar, batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def step_cost(before, after):
    """What a step cost the process beyond its wall time (getrusage, all its
    threads): CPU time in user code and in the kernel, and page faults. A step
    whose memory is mapped afresh (glibc's mmap'd chunks, returned to the
    system when freed) spends kernel time faulting it in again every step."""
    return {
        "user_s": after.ru_utime - before.ru_utime,
        "system_s": after.ru_stime - before.ru_stime,
        "minor_faults": after.ru_minflt - before.ru_minflt,
        "major_faults": after.ru_majflt - before.ru_majflt,
    }


def param_digest(model):
    """The parameters' float64 sum (readable) and the SHA-256 of their bytes (equal only if bitwise equal)."""
    digest = hashlib.sha256()
    with torch.no_grad():
        for p in model.parameters():
            digest.update(p.detach().contiguous().numpy().tobytes())
        checksum = float(sum(p.double().sum() for p in model.parameters()))
    return checksum, digest.hexdigest()


def grad_norms(model):
    """Each parameter's gradient norm (float64) as the last step left it: the
    tests' finer check than the losses, which adaLN-Zero keeps nearly fixed
    over a few steps (every block starts as the identity)."""
    with torch.no_grad():
        return [float(p.grad.double().norm()) if p.grad is not None else None for p in model.parameters()]


COMPILE_MODES = ("none", "default", "max-autotune")


def ipex_optimize(model, opt, amp):
    """IPEX's training set-up as its documentation gives it: ipex.optimize
    with the optimizer, the forward under the same autocast as the others.
    (IPEX 2.8 leaves an f32 model and its AdamW as they are; in bf16 its
    Linears hold bf16 weights and the optimizer f32 master copies.)"""
    import intel_extension_for_pytorch as ipex  # noqa: PLC0415 - only in IPEX's own venv
    dtype = AUTOCAST[amp] or torch.float32
    return ipex.optimize(model, optimizer=opt, dtype=dtype)


def run(model_name, batch, steps, warmup, threads, seed, amp="none", variant="dit", loader_workers=0,
        compile_mode="none", ipex=False, trace=None):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = DiT(*CONFIGS[model_name], variant=variant)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    if ipex:
        model, opt = ipex_optimize(model, opt, amp)
    # torch.compile (inductor: C++ for the CPU, built with the system compiler)
    # of the model, as a user would; compiled in the first (warm-up) step.
    net = model if compile_mode == "none" else torch.compile(model, mode=compile_mode)
    gen = torch.Generator().manual_seed(seed)
    abar = alphas_cumprod()
    step_times, losses, step_costs = [], [], []
    loader = loader_batches(batch, warmup + steps, loader_workers, seed) if loader_workers else None
    for i in range(warmup + steps):
        data = make_batch(gen, batch)
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        if loader:  # the wait for the worker's batch is part of the step
            x0, y = next(loader)
            data = (x0, y, data[2], data[3])
        # --trace: the last step under torch.profiler (shapes recorded), for
        # hcops-prof's whole-step table (its time is the profiled step's).
        traced = trace and i == warmup + steps - 1
        with torch.profiler.profile(record_shapes=True) if traced else contextlib.nullcontext() as profiler:
            loss = train_step(net, opt, abar, data, amp)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
        if traced:
            profiler.export_chrome_trace(trace)
        if i >= warmup:
            step_times.append(elapsed)
            losses.append(loss)
            step_costs.append(step_cost(before, after))
    checksum, digest = param_digest(model)
    return {
        "model": model_name,
        "batch": batch,
        "threads": threads,
        "autocast": amp,
        "variant": variant,
        "attention": "sdpa" if Attention.fused else "matmul",
        "step_times": step_times,
        "step_costs": step_costs,
        "median_s": statistics.median(step_times),
        "losses": losses,
        "param_checksum": checksum,
        "param_sha256": digest,
        "grad_norms": grad_norms(model),
        "loader_workers": loader_workers,
        "compile": compile_mode,
        "ipex": ipex,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--autocast", choices=sorted(AUTOCAST), default="none",
                    help="run the forward and the loss under torch.autocast('cpu', dtype) (default: none, fp32)")
    ap.add_argument("--variant", choices=VARIANTS, default="dit",
                    help="dit: the authors' model and loss (default); gemm-only: a Linear patch embedding and the "
                    "epsilon MSE alone, every GEMM through BLAS")
    ap.add_argument("--attention", choices=("matmul", "sdpa"), default="matmul",
                    help="matmul: q k^T, softmax, then v (default); sdpa: F.scaled_dot_product_attention, as timm's "
                    "Attention in PyTorch 2.x")
    ap.add_argument("--loader-workers", type=int, default=0,
                    help="take the latents from a DataLoader with this many worker processes doing CPU-side "
                    "augmentation (default 0: synthetic latents, no DataLoader)")
    ap.add_argument("--compile", choices=COMPILE_MODES, default="none",
                    help="torch.compile the model with this mode (PyTorch 2.x; the warm-up steps compile it)")
    ap.add_argument("--ipex", action="store_true",
                    help="ipex.optimize(model, optimizer, dtype) first (intel-extension-for-pytorch, in its own venv)")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of a summary")
    ap.add_argument("--trace", metavar="FILE", help="the last step under torch.profiler (shapes recorded), written "
                    "as a Chrome trace for hcops-prof FILE [--csv]")
    args = ap.parse_args()
    if args.compile != "none" and not hasattr(torch, "compile"):
        ap.error(f"--compile: torch {torch.__version__} has no torch.compile")
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        ap.error(f"--attention sdpa: torch {torch.__version__} has no F.scaled_dot_product_attention")
    Attention.fused = args.attention == "sdpa"
    if args.trace and not hasattr(torch, "profiler"):
        ap.error(f"--trace: torch {torch.__version__} has no torch.profiler")
    result = run(args.model, args.batch, args.steps, args.warmup, args.threads, args.seed, args.autocast,
                 args.variant, args.loader_workers, args.compile, args.ipex, args.trace)
    if args.json:
        print(json.dumps(result))
        return
    for i, (dt, loss, cost) in enumerate(zip(result["step_times"], result["losses"], result["step_costs"])):
        print(f"step {i}: {dt:.3f} s  loss {loss:.6f}  (CPU: user {cost['user_s']:.2f} s, system "
              f"{cost['system_s']:.2f} s; page faults {cost['minor_faults']} minor, {cost['major_faults']} major)")
    amp = "" if args.autocast == "none" else f", {args.autocast} autocast"
    amp += "" if args.variant == "dit" else f", {args.variant} variant"
    print(f"DiT-{args.model} batch {args.batch}, {args.threads} threads{amp}: median {result['median_s']:.3f} s/step")


if __name__ == "__main__":
    main()
