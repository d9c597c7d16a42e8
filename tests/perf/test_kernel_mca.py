"""perf/kernel_mca.py: the flops it counts per instruction (AArch64 FMLA,
BFDOT, FMOPA/BFMOPA at their vector lengths; x86 FMAs and vdpbf16ps), the
innermost loop it takes out of a hand-written disassembly (the one with the
most multiply-adds, its branch turned into a label), the step projection's
arithmetic on a hand-made profile, and, where Debian's llvm-mca-19 is
installed, a loop of known rate on a model (24 independent FMLAs on
Neoverse V1: 12 cycles) and this build's own kernels (x86-64's, or a cross
build's AArch64 ones) analysed end to end. No timing is judged."""
import os
import shutil
import subprocess
import sys
import tempfile

PERF = os.path.join(os.environ.get("srcdir", "."), "..", "perf")
BUILD = os.environ.get("HCOPS_TEST_TOP_BUILDDIR") or os.path.join(os.environ.get("HCOPS_TEST_BUILDDIR", "."), "..")
sys.path.insert(0, PERF)
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # time_limits
import kernel_mca as km  # noqa: E402
import time_limits  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# ---- flops per instruction
cases = [
    ("aarch64", "fmla z3.s, z0.s, z1.s[0]", 256, 16),
    ("aarch64", "fmla z3.s, p0/m, z0.s, z1.s", 512, 32),
    ("aarch64", "fmla z3.d, z0.d, z1.d[1]", 128, 4),
    ("aarch64", "fmla v3.4s, v0.4s, v1.s[0]", 128, 8),
    ("aarch64", "fmla v3.2d, v0.2d, v1.d[0]", 128, 4),
    ("aarch64", "bfdot z3.s, z0.h, z1.h[2]", 256, 32),
    ("aarch64", "fmopa za0.s, p0/m, p0/m, z0.s, z2.s", 0, 2 * 16 * 16),
    ("aarch64", "bfmopa za0.s, p0/m, p0/m, z0.h, z2.h", 0, 4 * 16 * 16),
    ("aarch64", "ld1w {z0.s}, p0/z, [x1]", 512, 0),
    ("x86_64", "vfmadd231ps (%rax){1to16},%zmm1,%zmm2", 512, 32),
    ("x86_64", "vfmadd231pd %ymm1,%ymm2,%ymm3", 512, 8),
    ("x86_64", "vdpbf16ps %zmm1,%zmm2,%zmm3", 512, 64),
    ("x86_64", "vmovups (%rax),%zmm1", 512, 0),
]
for arch, text, vl, want in cases:
    got = km.flops_of(arch, text, vl)
    check(got == want, f"{arch} '{text}' at {vl} bits: {got} flops, expected {want}")

# ---- the innermost loop with the most multiply-adds
body = [(0x10, "mov x3, #0"),
        (0x14, "ld1w {z0.s}, p0/z, [x1]"),          # an outer loop from here ...
        (0x18, "fmla z3.s, z0.s, z1.s[0]"),
        (0x1c, "ld1w {z1.s}, p0/z, [x2]"),          # ... holding an inner one from here
        (0x20, "fmla z4.s, z0.s, z1.s[0]"),
        (0x24, "fmla z5.s, z0.s, z1.s[1]"),
        (0x28, "subs x4, x4, #0x1"),
        (0x2c, "b.ne 1c <f+0x1c>"),
        (0x30, "subs x3, x3, #0x1"),
        (0x34, "b.ne 14 <f+0x14>"),
        (0x38, "fmla z6.s, z0.s, z1.s[0]"),
        (0x3c, "cbnz x5, 38 <f+0x38>")]              # a second innermost loop with fewer
lines, flops = km.innermost_loop("aarch64", body, 256)
check(flops == 2 * 16 and lines is not None and len(lines) == 7,
      f"inner loop: 5 instructions and 2 FMLAs ({flops} flops, {lines})")
check(lines is not None and lines[0] == ".Lloop:" and lines[-2] == "b.ne .Lloop" and lines[-1] == ".Lout:",
      f"its branch back is a label ({lines and lines[-2]})")

# ---- the step projection on a hand-made profile
with tempfile.TemporaryDirectory() as tmp:
    prof = os.path.join(tmp, "p.csv")
    with open(prof, "w") as f:
        f.write("operator,dtype,calls,self_ms,gflop,gb,limit_ms\n"
                "aten::mm,f32,1,1000.0,100.0,1.0,0\n"      # 100 GFLOP in 1 s here
                "aten::gelu,f32,1,10.0,0.0,4.7,0\n")        # 4.7 GB
    rows = [dict(family="sve-lane", dtype="f32", core="neoverse-v1", share_of_peak=1.0, model_peak_per_cycle=32.0)]
    steps, driver = km.project(rows, {"S-f32": prof}, {}, {"S-f32": 1.0}, {"f32": 200.0, "bw": 10.0})
    v1 = [r for r in steps if r["core"] == "neoverse-v1"]
    # driver: 100 GFLOP / 1 s / 200 GFLOPS = 0.5; V1: 32 x 2.6 = 83.2 GFLOPS at 0.5;
    # gelu: 4.7 GB / 4.7 GB/s = 1 s.
    want = 100 / (83.2 * 0.5) + 4.7 / 4.7
    check(abs(driver["S-f32"] - 0.5) < 1e-12, f"driver factor from the profile's GEMMs: {driver}")
    check(len(v1) == 1 and abs(v1[0]["projected_s_per_core"] - round(want, 3)) < 1e-9,
          f"V1's step: {v1 and v1[0]['projected_s_per_core']} s, expected {want:.3f}")
    here = [r for r in steps if r["core"].startswith("this machine")]
    want_here = 100 / (200 * 0.5) + 4.7 / 10
    check(len(here) == 1 and abs(here[0]["projected_s_per_core"] - round(want_here, 3)) < 1e-9,
          f"this machine's step: {here and here[0]['projected_s_per_core']} s, expected {want_here:.3f}")

# ---- llvm-mca: a loop of known rate, then this build's kernels
if not shutil.which("llvm-mca-19"):
    print("SKIP: llvm-mca-19 not installed (Debian: apt-get install llvm-19): the model runs are not checked")
else:
    block = km.peak_block("aarch64", "f32")
    cyc, why = km.mca("llvm-mca-19", "aarch64", "neoverse-v1", "+sve", block)
    check(cyc is not None and abs(cyc - 12) < 0.1, f"24 independent FMLAs on Neoverse V1: {cyc} cycles ({why})")
    lib = os.path.join(BUILD, "shim", ".libs", "libhcops.so.0.0.0")
    if not os.path.exists(lib):
        print(f"SKIP: no {lib}: the x86 kernels are not analysed")
    else:
        # The build's architecture (ELF e_machine): a cross build's library
        # (make check-aarch64) is analysed as AArch64, with its objdump.
        with open(lib, "rb") as f:
            aarch64 = int.from_bytes(f.read(20)[18:20], "little") == 183
        args = ["--aarch64-lib", lib, "--x86-lib", "none"] if aarch64 else ["--aarch64-lib", "none", "--x86-lib", lib]
        want = ({("neon", "neoverse-v2"), ("sve-lane", "neoverse-v1"), ("sme", "sme (assumed)")} if aarch64 else
                {("avx512", "znver5"), ("avx512_bf16", "znver5")})
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "k.csv")
            p = subprocess.run([sys.executable, os.path.join(PERF, "kernel_mca.py"), *args, "--csv", out],
                               capture_output=True, text=True, timeout=time_limits.limit(300))
            print(p.stdout[-1500:], p.stderr[-500:])
            kern, _ = km.read(out) if p.returncode == 0 else ([], [])
            fams = {(r["family"], r["core"]) for r in kern}
            check(p.returncode == 0 and want <= fams,
                  f"this build's {', '.join(sorted(f for f, _ in want))} loops analysed "
                  f"(status {p.returncode}, {sorted(fams)})")
            check(all(0 < float(r["share_of_peak"]) <= 1.001 for r in kern), "every share within (0, 1]")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
