#!/usr/bin/env python3
"""Projected throughput per core of HCOps' GEMM microkernels, from LLVM's
scheduling models (llvm-mca), and the DiT steps projected from them.

There is no Arm hardware here. For each microkernel this takes its
steady-state loop out of the built library (objdump: the innermost loop
holding the most multiply-adds), gives it to llvm-mca on each core's
scheduling model, and turns the model's cycles per iteration into flops per
cycle against the same model's peak (a block of independent multiply-adds
of the loop's kind). AArch64: neon, sve, sve_bf16 on Neoverse V1 (SVE 256
bits), V2 and N2 (128) and A64FX (512); sme has no LLVM model for
FMOPA/BFMOPA (none in LLVM 19), so its rate is an assumption, said in the
output. sve's two steps (by lane below 512-bit vectors, broadcasts from
512) are both analysed on every core. x86-64, as a check of the method: avx512 and avx512_bf16 on the
Zen 5 and Sapphire Rapids models, beside this machine's measured
hcops-peak and (--measured CSV) the measured GEMMs.

Then the DiT-S/2 and XL/2 steps per core: each operator of a hcops-prof
profile (its CSV of flops and bytes per operator) at max(flops / (the core's
peak x the kernel's projected share x the driver factor), bytes / the
core's bandwidth), where the driver factor (packing, C, cold operands) is
the one measured on this machine: the GEMMs' measured share of hcops-peak
(the loop itself runs at the peak here). The same sum for this machine,
with its measured peaks, against its measured step, and the x86 loops'
models against this machine's measured peak per cycle, show how far the
method is from hardware. Every figure is labelled a projection; clocks
and bandwidths are assumptions listed in the CSV.

  perf/kernel_mca.py [--aarch64-lib build-aarch64/shim/.libs/libhcops.so.0.0.0]
      [--x86-lib build/shim/.libs/libhcops.so.0.0.0] [--llvm-mca llvm-mca-19]
      [--profile NAME=CSV ...] [--measured-step NAME=SECONDS ...] [--measured-gemm f32=0.85,bf16=0.9]
      [--peaks-here f32=575,bf16=1067,bw=46]
      [--csv doc/perf/kernel-mca.csv] [--png doc/perf/kernel-mca.png]
  perf/kernel_mca.py --replot doc/perf/kernel-mca.csv --png doc/perf/kernel-mca.png

Exit status: 0; 1 when no kernel loop could be analysed; 2 usage.
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib.report import error, save_plot, pyplot, cpu_label  # noqa: E402

# A core: its LLVM model, its (SVE) vector length, and, for the step
# projections, a clock and one core's share of its chip's STREAM
# bandwidth. The clocks and bandwidths are assumptions from public
# figures (vendors' data sheets and STREAM reports), not measured here.
CORES = {
    # name: (arch, llvm cpu, mattr, vector bits, GHz, GB/s per core, machine)
    "neoverse-v1": ("aarch64", "neoverse-v1", "+sve,+bf16", 256, 2.6, 4.7, "AWS Graviton3 (64 cores, ~300 GB/s)"),
    "neoverse-v2": ("aarch64", "neoverse-v2", "+sve,+sve2,+bf16", 128, 3.1, 6.3, "NVIDIA Grace (72 cores, ~450 GB/s)"),
    "neoverse-n2": ("aarch64", "neoverse-n2", "+sve,+sve2,+bf16", 128, 3.0, 3.1, "Microsoft Cobalt 100 (128 cores, ~400 GB/s)"),
    "a64fx": ("aarch64", "a64fx", "+sve", 512, 2.2, 17.0, "Fujitsu A64FX (48 cores, HBM2 ~830 GB/s)"),
    "znver5": ("x86_64", "znver5", "", 512, None, None, "this machine's class (AMD Zen 5)"),
    "sapphirerapids": ("x86_64", "sapphirerapids", "", 512, None, None, "Intel Sapphire Rapids"),
}

# A kernel: where its loop is, what its multiply-adds are.
# name: (arch, family, dtype, regex on the demangled symbol up to its "(")
KERNELS = [
    ("aarch64", "neon", "f32", r"SimdKernel<hcops::kernels::neon::F32, float, 12>::full$"),
    ("aarch64", "neon", "f64", r"SimdKernel<hcops::kernels::neon::F64, double, 12>::full$"),
    # sve's two steps: by lane below 512-bit vectors, broadcasts from 512.
    ("aarch64", "sve-lane", "f32", r"LaneTile<hcops::kernels::sve::\(anonymous namespace\)::FmlaLaneStep<float>, float>"
     r"::full$"),
    ("aarch64", "sve-lane", "f64", r"LaneTile<hcops::kernels::sve::\(anonymous namespace\)::FmlaLaneStep<double>, "
     r"double>::full$"),
    ("aarch64", "sve-broadcast", "f32", r"LaneTile<hcops::kernels::sve::\(anonymous namespace\)::FmlaBroadcastStep"
     r"<float>, float>::full$"),
    ("aarch64", "sve-broadcast", "f64", r"LaneTile<hcops::kernels::sve::\(anonymous namespace\)::FmlaBroadcastStep"
     r"<double>, double>::full$"),
    ("aarch64", "sve_bf16", "bf16",
     r"LaneTile<hcops::kernels::sve_bf16::\(anonymous namespace\)::BfdotStep, float>::full$"),
    ("aarch64", "sme", "f32",
     r"sme::.*TileKernel<hcops::kernels::sme::HwTiles, hcops::GemmTypes<float, float, float, float, float, float, 1> >"
     r"::macro$"),
    ("aarch64", "sme", "bf16",
     r"sme::.*TileKernel<hcops::kernels::sme::HwTiles, hcops::GemmTypes<hcops::bf16, hcops::bf16, float, float, "
     r"hcops::bf16, hcops::bf16, 1> >::macro$"),
    ("aarch64", "sme", "f64",
     r"sme::.*TileKernel<hcops::kernels::sme::HwTiles, hcops::GemmTypes<double, double, double, double, double, double, "
     r"1> >::macro$"),
    ("x86_64", "avx512", "f32", r"SimdKernel<hcops::kernels::avx512::\(anonymous namespace\)::F32, float, 12>::full$"),
    ("x86_64", "avx512_bf16", "bf16", r"avx512_bf16::\(anonymous namespace\)::Kernel<float>::full$"),
]

# The SME assumption: one FMOPA/BFMOPA issued per cycle (each a full
# SVL x SVL outer product of f32, or its bf16 pairs), at a streaming vector
# length of 512 bits, the loads beside it.
SME_SVL = 512
SME_MOPA_PER_CYCLE = 1.0

def flops_of(arch, line, vl):
    """Flops of one instruction (0 if it multiplies nothing): 2 per
    multiply-add, at vector length vl (bits; SME: its streaming length)."""
    op, _, rest = line.partition(" ")
    if arch == "aarch64":
        if op == "fmla" or op == "fmad":
            if ".4s" in rest:
                return 8
            if ".2d" in rest:
                return 4
            if re.search(r"z\d+\.s", rest):
                return 2 * vl // 32
            if re.search(r"z\d+\.d", rest):
                return 2 * vl // 64
        if op == "bfdot":
            return 4 * (vl // 32 if "z" in rest else 4)
        if op == "fmopa" and "za" in rest:
            lanes = SME_SVL // (64 if ".d" in rest.split(",")[0] else 32)
            return 2 * lanes * lanes
        if op == "bfmopa":
            lanes = SME_SVL // 32
            return 4 * lanes * lanes
        return 0
    if re.match(r"vfn?m(add|sub)(132|213|231)p[sd]$", op):
        width = 512 if "zmm" in rest else 256 if "ymm" in rest else 128
        return 2 * width // (32 if op.endswith("ps") else 64)
    if op == "vdpbf16ps":
        width = 512 if "zmm" in rest else 256 if "ymm" in rest else 128
        return 4 * width // 32
    return 0


def peak_block(arch, dtype, family=""):
    """Assembly of 24 independent multiply-adds of the kernel's kind: the
    model's peak per cycle, in the same terms as the loop."""
    if family == "neon":
        t = "4s" if dtype == "f32" else "2d"
        return [f"fmla v{i}.{t}, v30.{t}, v31.{t}" for i in range(24)]
    if arch == "aarch64":
        if dtype == "f32":
            return [f"fmla z{i}.s, p0/m, z30.s, z31.s" for i in range(24)]
        if dtype == "f64":
            return [f"fmla z{i}.d, p0/m, z30.d, z31.d" for i in range(24)]
        return [f"bfdot z{i}.s, z30.h, z31.h" for i in range(24)]
    if dtype == "f32":
        return [f"vfmadd231ps %zmm30, %zmm31, %zmm{i}" for i in range(24)]
    if dtype == "f64":
        return [f"vfmadd231pd %zmm30, %zmm31, %zmm{i}" for i in range(24)]
    return [f"vdpbf16ps %zmm30, %zmm31, %zmm{i}" for i in range(24)]


CLOCK_PROBE = r"""
#include <stdio.h>
#include <time.h>
static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(void) {
  const long n = 400000000;
  double best = 1e9;
  for (int r = 0; r < 3; ++r) {
    long x = 0;
    double t0 = cpu_seconds();
    for (long i = 0; i < n; ++i) __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
    double t = cpu_seconds() - t0;
    if (t < best) best = t;
  }
  printf("%.3f\n", 4.0 * n / best / 1e9);
  return 0;
}
"""


def measure_clock(tmp):
    """This core's clock in GHz: a chain of dependent integer adds (one a
    cycle), timed in the thread's CPU time (another process on the core does
    not count). None where there is no C compiler."""
    src, exe = os.path.join(tmp, "clock.c"), os.path.join(tmp, "clock")
    with open(src, "w") as f:
        f.write(CLOCK_PROBE)
    try:
        subprocess.run(["cc", "-O1", "-o", exe, src], check=True, capture_output=True)
        return float(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def disassemble(objdump, lib):
    """{demangled symbol (up to its argument list): [(address, text)]}."""
    out = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", lib], capture_output=True, text=True,
                         check=True).stdout
    funcs, cur = {}, None
    head = re.compile(r"^([0-9a-f]+) <(.*)>:$")
    ins = re.compile(r"^\s+([0-9a-f]+):\s+(.*)$")
    for line in out.splitlines():
        m = head.match(line)
        if m:
            name = m.group(2)
            depth, cut = 0, len(name)
            for i, ch in enumerate(name):  # the argument list: the first "(" outside template brackets
                if ch == "<":
                    depth += 1
                elif ch == ">":
                    depth -= 1
                elif ch == "(" and depth == 0 and not name[i:].startswith("(anonymous"):
                    cut = i
                    break
            cur = funcs.setdefault(name[:cut], [])
            continue
        m = ins.match(line)
        if m and cur is not None:
            text = m.group(2).split("//")[0]  # objdump's comments
            cur.append((int(m.group(1), 16), " ".join(text.split())))
    return funcs


BRANCH = re.compile(r"^(b\.\w+|b|cbn?z|tbn?z|j\w+)\s+(?:.*?,\s*)?(?:#?)([0-9a-f]+)\s*(<.*>)?$")


def innermost_loop(arch, body, vl):
    """The instructions of the innermost backward-branching loop with the most
    flops, as (label-resolved) assembly lines, and its flops per iteration."""
    loops = []
    for i, (addr, text) in enumerate(body):
        m = BRANCH.match(text)
        if not m:
            continue
        target = int(m.group(2), 16)
        if target <= addr:
            start = next((j for j, (a, _) in enumerate(body) if a == target), None)
            if start is not None:
                loops.append((start, i))
    inner = [lp for lp in loops if not any(o != lp and lp[0] <= o[0] and o[1] <= lp[1] for o in loops)]
    best, best_flops = None, 0
    for s, e in inner:
        fl = sum(flops_of(arch, t, vl) for _, t in body[s:e + 1])
        if fl > best_flops:
            best, best_flops = (s, e), fl
    if not best:
        return None, 0
    s, e = best
    lines = [".Lloop:"]
    for addr, text in body[s:e + 1]:
        m = BRANCH.match(text)
        if m:
            target = int(m.group(2), 16)
            text = text[:m.start(2)].rstrip(" #") + " " + (".Lloop" if target == body[s][0] else ".Lout")
        text = re.sub(r"\s*<[^>]*>$", "", text)
        lines.append(text)
    lines.append(".Lout:")
    return lines, best_flops


def mca(tool, arch, cpu, mattr, lines, iterations=1000):
    """Cycles per iteration of `lines` on the model, or None and why."""
    cmd = [tool, f"-mtriple={arch}", f"-mcpu={cpu}", f"-iterations={iterations}"]
    if mattr:
        cmd.append(f"-mattr={mattr}")
    p = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", p.stdout)
    if p.returncode != 0 or not m:
        return None, (p.stderr.strip().splitlines() or ["no output"])[0]
    return int(m.group(1)) / iterations, ""


def analyse(args):
    tool = args.llvm_mca
    rows, notes = [], []
    libs = {"aarch64": (args.aarch64_lib, args.aarch64_objdump), "x86_64": (args.x86_lib, "objdump")}
    disasm = {}
    for arch, (lib, objdump) in libs.items():
        if not lib or not os.path.exists(lib):
            notes.append(f"{arch}: no library at {lib} (build it: make check-aarch64 or make all)")
            continue
        if not shutil.which(objdump):
            notes.append(f"{arch}: no {objdump}")
            continue
        disasm[arch] = disassemble(objdump, lib)
    for arch, family, dtype, pattern in KERNELS:
        if arch not in disasm:
            continue
        rx = re.compile(pattern)
        names = [n for n in disasm[arch] if rx.search(n)]
        if not names:
            notes.append(f"{family} {dtype}: no symbol matching {pattern}")
            continue
        # The loop with the most multiply-adds is the same at any vector
        # length (their flops all scale with it): taken once, counted per core.
        loop, _ = innermost_loop(arch, disasm[arch][names[0]], 128)
        if not loop:
            notes.append(f"{family} {dtype}: no loop with multiply-adds in {names[0]}")
            continue
        fma = sum(1 for t in loop if flops_of(arch, t, 128))
        row = dict(arch=arch, family=family, dtype=dtype, loop_instructions=len(loop) - 2, multiply_adds=fma)
        if family == "sme":  # no core model of it: the assumption, the rest on V2's model
            flops = sum(flops_of(arch, t, SME_SVL) for t in loop)
            _, cpu, mattr = CORES["neoverse-v2"][:3]
            rest, _ = mca(tool, arch, cpu, mattr, [t for t in loop if not flops_of(arch, t, SME_SVL)])
            cyc = max(fma / SME_MOPA_PER_CYCLE, rest or 0)
            peak = SME_MOPA_PER_CYCLE * flops / fma
            rows.append(dict(row, core="sme (assumed)", vector_bits=SME_SVL, flops_per_iteration=flops,
                             cycles_per_iteration=round(cyc, 3), flops_per_cycle=round(flops / cyc, 2),
                             model_peak_per_cycle=round(peak, 2), share_of_peak=round(flops / cyc / peak, 4),
                             source=f"assumed: {SME_MOPA_PER_CYCLE:g} MOPA a cycle at SVL {SME_SVL}; "
                                    f"the other {len(loop) - 2 - fma} instructions on {cpu}'s model: "
                                    f"{rest if rest is not None else 'n/a'} cycles"))
            continue
        for core, (carch, cpu, mattr, vl, ghz, bw, machine) in CORES.items():
            if carch != arch or (cpu == "a64fx" and dtype == "bf16"):  # A64FX has no FEAT_BF16
                continue
            vl = 128 if family == "neon" else vl
            flops = sum(flops_of(arch, t, vl) for t in loop)
            pblock = peak_block(arch, dtype, family)
            pflops = sum(flops_of(arch, t, vl) for t in pblock)
            cyc, why = mca(tool, arch, cpu, mattr, loop)
            pcyc, pwhy = mca(tool, arch, cpu, mattr, pblock)
            if cyc is None or pcyc is None:
                notes.append(f"{family} {dtype} on {core}: llvm-mca: {why or pwhy}")
                continue
            peak = pflops / pcyc
            rows.append(dict(row, core=core, vector_bits=vl, flops_per_iteration=flops,
                             cycles_per_iteration=round(cyc, 3), flops_per_cycle=round(flops / cyc, 2),
                             model_peak_per_cycle=round(peak, 2), share_of_peak=round(flops / cyc / peak, 4),
                             source=f"llvm-mca {cpu}"))
    here = pairs(args.peaks_here, float)
    clock = None
    if any(r["arch"] == "x86_64" for r in rows) and here:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            clock = measure_clock(tmp)
    for r in rows:
        r["measured_peak_per_cycle"] = ""
        if r["arch"] == "x86_64" and clock and r["dtype"] in here:
            r["measured_peak_per_cycle"] = round(here[r["dtype"]] / os.cpu_count() / clock, 1)
    if clock:
        notes.append(f"this machine's clock: {clock:.2f} GHz (dependent adds); measured per-cycle peaks are "
                     f"hcops-peak's per core over it")
    return rows, notes


def read_profile(path):
    """(name, dtype, gflop, gb, self ms) per operator of a hcops-prof CSV."""
    with open(path) as f:
        return [(r["operator"], r["dtype"], float(r["gflop"] or 0), float(r["gb"] or 0), float(r["self_ms"] or 0))
                for r in csv.DictReader(f) if not r["operator"].startswith("#")]


GEMM_LIKE = re.compile(r"(mm|addmm|bmm|matmul|linear|attention|_scaled_dot_product)")


def arm_family(dtype, vl):
    """The family an SVE core of vector length vl runs a precision's GEMMs on
    (sve/family.cpp: broadcasts from 512 bits)."""
    return "sve_bf16" if dtype == "bf16" else "sve-broadcast" if vl >= 512 else "sve-lane"


def step_time(ops, gflops, efficiency, gbps):
    """A step's seconds: each operator at max(its flops at the GEMMs' rate,
    its bytes at the bandwidth); the operators without flops at the latter."""
    return sum(max(g / (gflops * efficiency) if GEMM_LIKE.search(n) else 0.0, b / gbps) for n, d, g, b, ms in ops)


def project(rows, profiles, measured_gemm, measured_steps, peaks_here):
    """Step time per core for each profile, each core with a row for the
    profile's precision: the projection and its inputs."""
    out = []
    share = {(r["family"], r["dtype"], r["core"]): r["share_of_peak"] for r in rows}
    peak = {(r["family"], r["dtype"], r["core"]): r["model_peak_per_cycle"] for r in rows}
    here = {"f32": "avx512", "bf16": "avx512_bf16"}
    driver = {}
    for name, path in profiles.items():
        ops = read_profile(path)
        dt = "bf16" if "bf16" in name else "f32"
        # The driver factor: the GEMMs' measured share of hcops-peak here,
        # given by precision or else the profiled step's own mm, addmm and
        # bmm (their flops over their time). The loop itself runs at the FMA
        # peak here (hcops-peak's own loop is the same kind), so what the
        # share loses is the driver's: packing, C's write-back, edges,
        # operands cold from memory. The same driver runs on every family.
        gemms = [(g, ms) for n, d, g, b, ms in ops if re.search(r"::(mm|addmm|bmm)$", n)]
        if dt in measured_gemm:
            driver[name] = measured_gemm[dt]
        elif gemms and peaks_here.get(dt):
            driver[name] = sum(g for g, _ in gemms) / (sum(ms for _, ms in gemms) / 1e3) / peaks_here[dt]
        common = dict(step=name, gemm_gflop=round(sum(g for n, d, g, b, ms in ops if GEMM_LIKE.search(n)), 2),
                      other_gb=round(sum(b for n, d, g, b, ms in ops if not GEMM_LIKE.search(n)), 3))
        for core, (arch, cpu, mattr, vl, ghz, bw, machine) in CORES.items():
            fam = arm_family(dt, vl)
            if arch != "aarch64" or (fam, dt, core) not in share:
                continue
            p1 = peak[(fam, dt, core)] * ghz  # GFLOPS per core
            eff = share[(fam, dt, core)] * driver.get(name, 1.0)
            out.append(dict(common, core=core, machine=machine, family=fam, ghz=ghz, gbps_per_core=bw,
                            peak_gflops_per_core=round(p1, 1), gemm_efficiency=round(eff, 3),
                            projected_s_per_core=round(step_time(ops, p1, eff, bw), 3), measured_s=""))
        p, bw = peaks_here.get(dt), peaks_here.get("bw")
        if name in measured_steps and p and bw:
            eff = driver.get(name, 1.0)
            out.append(dict(common, core=f"this machine ({os.cpu_count()} cores)", machine=cpu_label(),
                            family=here[dt], ghz="", gbps_per_core=round(bw, 1), peak_gflops_per_core=round(p, 1),
                            gemm_efficiency=round(eff, 3), projected_s_per_core=round(step_time(ops, p, eff, bw), 3),
                            measured_s=measured_steps[name]))
    return out, driver


def plot(kernel_rows, step_rows, png):
    plt = pyplot()
    if not plt:
        return
    fig, axes = plt.subplots(1, 2, figsize=(14, 0.22 * len(kernel_rows) + 1.5),
                             gridspec_kw={"width_ratios": [1.1, 1]})
    ax = axes[0]
    labels = [f"{r['family']} {r['dtype']} on {r['core']}" for r in kernel_rows]
    y = list(range(len(labels)))[::-1]
    ax.barh(y, [100 * float(r["share_of_peak"]) for r in kernel_rows],
            color=["tab:orange" if r["arch"] == "aarch64" else "tab:blue" for r in kernel_rows])
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("loop's projected share of the model's peak (%); blue: x86-64")
    ax.set_title("Microkernel loops on LLVM 19's models (projection)", fontsize=9)
    ax.set_xlim(0, 110)
    ax = axes[1]
    steps = [r for r in step_rows if not r["core"].startswith("this machine")]
    names = sorted({r["step"] for r in steps})
    cores = sorted({r["core"] for r in steps})
    for i, c in enumerate(cores):
        vals = [next((float(r["projected_s_per_core"]) for r in steps if r["step"] == n and r["core"] == c), 0)
                for n in names]
        ax.bar([j + 0.8 * i / len(cores) for j in range(len(names))], vals, 0.8 / len(cores), label=c)
    ax.set_xticks([j + 0.4 - 0.4 / len(cores) for j in range(len(names))], names, fontsize=7, rotation=20)
    ax.set_ylabel("projected seconds per step on one core")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title("DiT steps per core (projection: clocks and bandwidths assumed)", fontsize=9)
    save_plot(fig, png)


KERNEL_COLUMNS = ["arch", "family", "dtype", "core", "vector_bits", "loop_instructions", "multiply_adds",
                  "flops_per_iteration", "cycles_per_iteration", "flops_per_cycle", "model_peak_per_cycle",
                  "share_of_peak", "measured_peak_per_cycle", "source"]
STEP_COLUMNS = ["step", "core", "machine", "family", "ghz", "gbps_per_core", "peak_gflops_per_core",
                "gemm_efficiency", "gemm_gflop", "other_gb", "projected_s_per_core", "measured_s"]


def write(path, kernel_rows, step_rows, notes):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table"] + KERNEL_COLUMNS)
        for r in kernel_rows:
            w.writerow(["kernel"] + [r[c] for c in KERNEL_COLUMNS])
        w.writerow(["table"] + STEP_COLUMNS)
        for r in step_rows:
            w.writerow(["step"] + [r[c] for c in STEP_COLUMNS])
        for n in notes:
            f.write(f"# {n}\n")
    print(f"wrote {path}")


def read(path):
    kernel_rows, step_rows, cols = [], [], None
    with open(path) as f:
        for rec in csv.reader(line for line in f if not line.startswith("#")):
            if rec[0] == "table":
                cols = rec[1:]
            elif rec[0] in ("kernel", "step"):
                (kernel_rows if rec[0] == "kernel" else step_rows).append(dict(zip(cols, rec[1:])))
    return kernel_rows, step_rows


def pairs(items, conv=str):
    out = {}
    for it in items or []:
        for part in it.split(","):
            k, _, v = part.partition("=")
            if not v:
                raise SystemExit(f"{os.path.basename(sys.argv[0])}: expected NAME=VALUE, got {part!r}")
            out[k] = conv(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aarch64-lib", default="build-aarch64/shim/.libs/libhcops.so.0.0.0")
    ap.add_argument("--aarch64-objdump", default="aarch64-linux-gnu-objdump")
    ap.add_argument("--x86-lib", default="build/shim/.libs/libhcops.so.0.0.0")
    ap.add_argument("--llvm-mca", default="llvm-mca-19")
    ap.add_argument("--profile", action="append", help="NAME=CSV: a hcops-prof --csv of a step (NAME holds "
                    "'bf16' for a bf16 step)")
    ap.add_argument("--measured-step", action="append", help="NAME=SECONDS: the step measured here")
    ap.add_argument("--measured-gemm", action="append", help="f32=SHARE,bf16=SHARE: the GEMMs' measured share of "
                    "hcops-peak here (the driver factor; default: the profiled step's mm/addmm/bmm against "
                    "--peaks-here)")
    ap.add_argument("--peaks-here", action="append", help="f32=GFLOPS,bf16=GFLOPS,bw=GB/s: this machine's "
                    "measured peaks on all its CPUs (hcops-peak, hcops-stream) for the checks of the method")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot needs --png")
        k, s = read(args.replot)
        plot(k, s, args.png)
        return 0
    if not shutil.which(args.llvm_mca):
        error(f"no {args.llvm_mca}: install Debian's llvm-19 (apt-get install llvm-19)")
        return 1
    rows, notes = analyse(args)
    if not rows:
        for n in notes:
            error(n)
        return 1
    print(f"{'family':<14}{'dtype':<6}{'core':<16}{'VL':>5}{'instr':>7}{'MACs':>6}{'cyc/it':>9}"
          f"{'flop/cyc':>10}{'peak':>8}{'share':>8}{'here':>7}  source")
    for r in rows:
        print(f"{r['family']:<14}{r['dtype']:<6}{r['core']:<16}{r['vector_bits']:>5}{r['loop_instructions']:>7}"
              f"{r['multiply_adds']:>6}{r['cycles_per_iteration']:>9.2f}{r['flops_per_cycle']:>10.1f}"
              f"{r['model_peak_per_cycle']:>8.1f}{100 * r['share_of_peak']:>7.1f}%{str(r['measured_peak_per_cycle']):>7}"
              f"  {r['source']}")
    steps = []
    profiles = pairs(args.profile)
    if profiles:
        steps, driver = project(rows, profiles, pairs(args.measured_gemm, float), pairs(args.measured_step, float),
                                pairs(args.peaks_here, float))
        notes.append("driver factor (the GEMMs' measured share of hcops-peak here): " +
                     ", ".join(f"{k} {v:.3f}" for k, v in driver.items()))
        print(f"\n{'step':<18}{'core':<24}{'GHz':>5}{'GB/s':>7}{'GFLOPS':>8}{'eff':>7}{'s/step':>9}{'measured':>10}")
        for r in steps:
            print(f"{r['step']:<18}{r['core']:<24}{str(r['ghz']):>5}{r['gbps_per_core']:>7}"
                  f"{r['peak_gflops_per_core']:>8}{r['gemm_efficiency']:>7}{r['projected_s_per_core']:>9}"
                  f"{str(r['measured_s']):>10}")
    notes.append(f"sme: LLVM 19 has no scheduling model of FMOPA/BFMOPA; assumed {SME_MOPA_PER_CYCLE:g} a cycle at "
                 f"SVL {SME_SVL}")
    notes.append("clocks and per-core bandwidths of the Arm cores are assumptions (CORES in perf/kernel_mca.py)")
    for n in notes:
        print(f"note: {n}")
    if args.csv:
        write(args.csv, rows, steps, notes)
    if args.png:
        plot([{k: str(v) for k, v in r.items()} for r in rows], [{k: str(v) for k, v in r.items()} for r in steps],
             args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
