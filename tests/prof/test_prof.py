"""hcops-prof on real and hand-written logs (tools/hcops-prof).

Real: one step of DiT-tiny (perf/dit/dit.py) under hcops-run with
HCOPS_VERBOSE=1 (GEMM and operator lines), under bf16 autocast (HCOps's
oneDNN primitive lines), and stock with ONEDNN_VERBOSE=1 (where stock sends
oneDNN nothing, an AVX2 CPU, a written log of oneDNN f32 lines): the table, the CSV
(its calls and times against the log's own exec lines, summed here), the PNG,
and --project --quick (a time for HCOps and each installed peer).
Hand-written: known flops, shares, aggregation by shape, %peak with given
peaks, Open MPI tagged lines, program output in between. Bad logs: each gives
"hcops-prof: FILE:LINE: what" and status 2 (a truncated last line only
warns), and never a traceback. Traces: a torch.profiler Chrome trace,
hand-written (self times, flops, bytes and limits by hand) and real.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # time_limits
import time_limits  # noqa: E402

BUILD = os.environ.get("HCOPS_TEST_TOP_BUILDDIR") or os.path.join(os.environ["HCOPS_TEST_BUILDDIR"], "..")
SRC = os.path.join(os.environ.get("srcdir", "."), "..")
PROF = os.path.join(BUILD, "tools", "hcops-prof")
RUN = os.path.join(BUILD, "tools", "hcops-run")
DIT = os.path.join(SRC, "perf", "dit", "dit.py")
PYTHON = "/usr/bin/python3"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def prof(*args, stdin=None):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))
    p = subprocess.run([PROF, *args], capture_output=True, text=True, env=env, input=stdin, timeout=time_limits.limit(600))
    check("Traceback" not in p.stderr, f"no traceback from hcops-prof {' '.join(args)}")
    return p


def log_of(cmd, env_extra, path):
    env = dict(os.environ, OMP_NUM_THREADS="2", **env_extra)
    for var in ("LD_PRELOAD", "HCOPS_VERBOSE", "ONEDNN_VERBOSE"):
        if var not in env_extra:
            env.pop(var, None)
    with open(path, "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, check=True, timeout=time_limits.limit(300))
    return path


def exec_sums(path, prefix, ms_field):
    """(calls, total ms) of the log's lines starting with prefix, summed here."""
    calls, ms = 0, 0.0
    with open(path) as f:
        for line in f:
            if line.startswith(prefix):
                calls += 1
                ms += float(line.rstrip("\n").split(",")[ms_field])
    return calls, ms


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def real_logs():
    dit = [PYTHON, DIT, "--model", "tiny", "--steps", "1", "--warmup", "0", "--threads", "2"]
    fp32 = log_of([RUN] + dit, {"HCOPS_VERBOSE": "1"}, os.path.join(TMP, "fp32.log"))
    out_csv, out_png = os.path.join(TMP, "fp32.csv"), os.path.join(TMP, "fp32.png")
    p = prof(fp32, "--csv", out_csv, "--png", out_png)
    print(p.stdout)
    check(p.returncode == 0, f"fp32 log profiled (status {p.returncode}: {p.stderr.strip()})")
    check("By routine, operator and primitive" in p.stdout and "By shape" in p.stdout, "fp32: both tables")
    rows = read_csv(out_csv)
    # hcops-run's GEMMs: the dispatcher's (aten::mm, ...) and any sgemm_ left.
    blas_calls, blas_ms = exec_sums(fp32, "hcops_verbose,exec,sgemm_,", 14)
    aten_calls, aten_ms = exec_sums(fp32, "hcops_verbose,exec,aten::", 14)
    gemm_calls, gemm_ms = blas_calls + aten_calls, blas_ms + aten_ms
    csv_gemm = [r for r in rows if r["part"] == "gemm"]
    check(sum(int(r["calls"]) for r in csv_gemm) == gemm_calls and gemm_calls > 0,
          f"fp32: CSV GEMM calls {sum(int(r['calls']) for r in csv_gemm)} = the log's {gemm_calls}")
    check(abs(sum(float(r["total_ms"]) for r in csv_gemm) - gemm_ms) < 1e-6 * max(1, gemm_ms),
          "fp32: CSV GEMM time = the log's")
    ops = [r for r in rows if r["part"] == "operator"]
    check(any(r["name"] == "gelu" for r in ops) and any(r["name"] == "adam_step_" for r in ops),
          "fp32: operator rows (gelu, adam_step_)")
    check(abs(sum(float(r["share"]) for r in rows) - 1) < 1e-4, "fp32: shares sum to 1")
    for r in csv_gemm:
        # "NN 100x200x300", or a batched call's "8x NN 64x64x32"
        parts = r["shape"].split()
        batches = int(parts[0][:-1]) if len(parts) == 3 else 1
        m, n, k = (int(x) for x in parts[-1].split("x"))
        if float(r["work_per_call"]) != 2.0 * batches * m * n * k:
            check(False, f"fp32: flops of {r['shape']}")
            break
    with open(out_png, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "fp32: the PNG is a PNG")
    p = prof(fp32, "--project", "--quick", "--rounds", "1", "--no-peak")
    print(p.stdout[p.stdout.find("Projection"):])
    check(p.returncode == 0, f"fp32 --project ran ({p.stderr.strip()[-300:]})")
    proj = p.stdout[p.stdout.find("Projection"):]
    gemm_line = next((l for l in proj.splitlines() if l.startswith("BLAS GEMM")), "")
    cells = gemm_line.split()
    check(len(cells) >= 7 and all(c.rstrip("*") != "-" for c in cells[3:7]) or "peers not installed" in proj,
          "fp32 --project: a GEMM time for hcops, onednn, openblas, blis (or absent peers named)")

    bf16 = log_of([RUN] + dit + ["--autocast", "bf16"], {"HCOPS_VERBOSE": "1"}, os.path.join(TMP, "bf16.log"))
    p = prof(bf16, "--csv", os.path.join(TMP, "bf16.csv"), "--no-peak")
    check(p.returncode == 0, "bf16 log profiled")
    # bf16 matmuls: the dispatcher's (aten::mm ... dtype=bf16) under hcops-run,
    # and any oneDNN matmul the preloaded libhcops.so took.
    dnnl_calls, _ = exec_sums(bf16, "hcops_verbose,exec,cpu,matmul,", 10)
    with open(bf16) as f:
        aten_calls = sum(1 for line in f if line.startswith("hcops_verbose,exec,aten::") and "dtype=bf16" in line)
    calls = dnnl_calls + aten_calls
    rows = read_csv(os.path.join(TMP, "bf16.csv"))
    counted = sum(int(r["calls"]) for r in rows
                  if r["part"] == "dnnl" or (r["part"] == "gemm" and r["name"].startswith("aten::") and r["dtype"] == "bf16"))
    check(calls > 0 and counted == calls, f"bf16: HCOps's bf16 matmul lines counted ({calls}, CSV {counted})")

    stock = log_of(dit + ["--autocast", "bf16"], {"ONEDNN_VERBOSE": "1"}, os.path.join(TMP, "stock.log"))
    with open(stock) as f:
        executed = any(",exec," in line and line.startswith(("onednn_verbose", "dnnl_verbose")) for line in f)
    if not executed:
        # PyTorch 1.13 sends bf16 matmuls to oneDNN only with AVX-512 BW/VL/DQ,
        # and oneDNN 2.6 has no bf16 matmul without them: on an AVX2 CPU the
        # stock log is empty. --project is checked on oneDNN's f32 lines then.
        print("INFO: stock PyTorch sent nothing to oneDNN on this CPU (its bf16 matmuls need AVX-512): "
              "--project is checked on a oneDNN log of f32 matmuls and a reorder written here")
        with open(stock, "w") as f:
            f.write(STOCK_F32)
    p = prof(stock, "--project", "--quick", "--rounds", "1", "--no-peak", "--project-csv",
             os.path.join(TMP, "stock-proj.csv"))
    print(p.stdout[p.stdout.find("Projection"):])
    check(p.returncode == 0, f"stock oneDNN log --project ran ({p.stderr.strip()[-300:]})")
    prows = read_csv(os.path.join(TMP, "stock-proj.csv"))
    matmuls = [r for r in prows if r["call"].startswith("matmul,")]
    check(matmuls and all(r["hcops_s_per_call"] and r["onednn_s_per_call"] for r in matmuls),
          f"stock --project: HCOps and oneDNN times for every matmul ({len(matmuls)})")
    others = [r for r in prows if not r["call"].startswith("matmul,")]
    check(all(not r["hcops_s_per_call"] for r in others) and (not others or "carried" in p.stdout),
          f"stock --project: the other primitives ({len(others)}: convolution, reorder) carried, not replayed")
    whole = next((l for l in p.stdout.splitlines() if l.startswith("whole log")), "").split()
    check(len(whole) >= 5 and whole[3] != "-" and whole[4] != "-", f"stock --project: whole-log times {whole}")


# A oneDNN 2.6 log as stock PyTorch's f32 Linear layers would give it,
# for a CPU where stock sends oneDNN no bf16 matmul (see above).
STOCK_F32 = """\
onednn_verbose,info,oneDNN v2.6.3 (commit N/A)
onednn_verbose,exec,cpu,matmul,gemm:jit,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ba:f0 dst_f32::blocked:ab:f0,,,512x96:96x384:512x384,0.9
onednn_verbose,exec,cpu,matmul,gemm:jit,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,,,512x384:384x96:512x96,0.8
onednn_verbose,exec,cpu,matmul,gemm:jit,undef,src_f32::blocked:abc:f0 wei_f32::blocked:acb:f0 dst_f32::blocked:abc:f0,,,8x64x32:8x32x64:8x64x64,0.2
onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 dst_f32::blocked:acdb:f0,,,2x4x16x16,0.05
"""

HAND = """\
program output, not a verbose line
hcops_verbose,info,isa=avx512,domains=1,cores=2,topology=this machine,threads=2,fp32_math=strict
hcops_verbose,legend,routine,transa,transb,m,n,k,alpha,lda,ldb,beta,ldc,threads,ms,gflops,impl,details
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,1.2,10,hcops:avx512,tile=32x12
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,1.2,10,hcops:avx512,tile=32x12
hcops_verbose,exec,dgemm_,T,N,10,10,10,-1.5,10,10,0.5,10,1,0.4,0.005,hcops:avx512,unpacked
hcops_verbose,exec,gelu,f32,1000x1000,2,0.8,hcops:avx512,approximate=tanh
hcops_verbose,fallback,gelu,f64,10x10,dtype
hcops_verbose,fallback,dnnl,matmul,create,post_op_binary
[1,1]<stderr>:hcops_verbose,mpi,1,MPI_Allreduce,2,1000,MPI_FLOAT,MPI_SUM,4000,2.0,0.4
hcops_verbose,mpi,0,allreduce,2,3699,MPI_FLOAT,MPI_SUM,14796,23.163,-
onednn_verbose,info,oneDNN v2.6.3 (commit N/A)
onednn_verbose,exec,cpu,matmul,brg:avx512_core_bf16,undef,src_bf16::blocked:abc:f0 wei_bf16::blocked:acb:f0 dst_bf16::blocked:abc:f0,,,4x64x32:4x32x64:4x64x64,0.4
onednn_verbose,primitive,exec,cpu,matmul,brg_matmul:avx512_core,undef,src_f32::blocked:ab::f0 wei_f32::blocked:ab::f0 dst_f32::blocked:ab::f0,,,2x100:3x100x50,0.2
onednn_verbose,1732412345.123,primitive,exec,cpu,matmul,brg_matmul:avx512_core,undef,src_f32::blocked:ab::f0 wei_f32::blocked:ab::f0 dst_f32::blocked:ab::f0,,,2x100:3x100x50,0.2
hcops_verbose,exec,_scaled_dot_product_flash_attention_for_cpu,bf16,2x4x64x32,2,0.5,hcops:avx512,S=64 products=amx_tiles
hcops_verbose,exec,_scaled_dot_product_flash_attention_for_cpu_backward,f32,2x4x64x32,2,2.0,hcops:avx512,S=128
hcops_verbose,total,3 calls,2.800 ms,10.00 GFLOPS
"""


def hand_logs():
    path = os.path.join(TMP, "hand.log")
    with open(path, "w") as f:
        f.write(HAND)
    out = os.path.join(TMP, "hand.csv")
    p = prof(path, "--csv", out, "--peak-gflops", "100", "--bandwidth", "10")
    print(p.stdout)
    check(p.returncode == 0, "hand log profiled")
    rows = {(r["name"], r["shape"]): r for r in read_csv(out)}
    s = rows.get(("sgemm_", "NN 100x200x300"))
    check(s is not None and s["calls"] == "2" and abs(float(s["total_ms"]) - 2.4) < 1e-9,
          "hand: two sgemm_ calls of one shape aggregated")
    check(s is not None and abs(float(s["rate"]) - 10.0) < 1e-6 and abs(float(s["peak_fraction"]) - 0.1) < 1e-6,
          "hand: sgemm_ 2*100*200*300 flops in 1.2 ms = 10 GFLOPS = 10% of 100")
    total = 2.4 + 0.4 + 0.8 + 0.4 + 0.4 + 0.4 + 0.5 + 2.0
    check(s is not None and abs(float(s["share"]) - 2.4 / total) < 1e-6, "hand: share of the profiled time")
    g = rows.get(("gelu", "1000x1000"))
    check(g is not None and abs(float(g["rate"]) - 8e6 / 0.8e-3 / 1e9) < 1e-6 and
          abs(float(g["peak_fraction"]) - 1.0) < 1e-6, "hand: gelu 2 x 4 MB in 0.8 ms = 10 GB/s = 100% of 10")
    mm = rows.get(("matmul", "4x64x32:4x32x64:4x64x64"))
    check(mm is not None and float(mm["work_per_call"]) == 2.0 * 4 * 64 * 64 * 32, "hand: batched matmul flops")
    v3 = rows.get(("matmul", "2x100:3x100x50"))
    check(v3 is not None and v3["calls"] == "2" and float(v3["work_per_call"]) == 2.0 * 3 * 2 * 50 * 100,
          "hand: oneDNN 3.x lines (marker, timestamp; src:wei problem, broadcast batch)")
    fa = rows.get(("_scaled_dot_product_flash_attention_for_cpu", "2x4x64x32"))
    check(fa is not None and fa["work"] == "flops" and float(fa["work_per_call"]) == 4.0 * 2 * 4 * 64 * 64 * 32 and
          abs(float(fa["peak_fraction"]) - 4.0 * 2 * 4 * 64 * 64 * 32 / 0.5e-3 / 1e9 / 100) < 1e-5,
          "hand: attention forward 4 B H L S E flops, at the peak")
    fb = rows.get(("_scaled_dot_product_flash_attention_for_cpu_backward", "2x4x64x32 S=128"))
    check(fb is not None and fb["work"] == "flops" and float(fb["work_per_call"]) == 10.0 * 2 * 4 * 64 * 128 * 32,
          "hand: attention backward 10 B H L S E flops, S from the details (128 keys for 64 queries)")
    mpi = [r for r in read_csv(out) if r["part"] == "mpi"]
    mine = [r for r in mpi if r["name"] == "MPI_Allreduce"]
    check(len(mpi) == 2 and len(mine) == 1 and abs(float(mine[0]["total_ms"]) - 0.4) < 1e-9,
          "hand: the tagged MPI line (exposed ms), and a torch.distributed backend's line (exposed '-')")
    check("1 not verbose lines skipped" in p.stdout, "hand: the program's line skipped and counted")
    check("Operators PyTorch ran itself" in p.stdout and "dtype" in p.stdout, "hand: fallbacks listed")
    check("dnnl:matmul" in p.stdout and "post_op_binary" in p.stdout, "hand: a primitive left to libdnnl listed")
    p = prof("-", "--no-peak", stdin=HAND)
    check(p.returncode == 0 and "sgemm_" in p.stdout, "hand: read from standard input")


STEPS = """\
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,5.0,2.4,hcops:avx512,tile=32x12
hcops_verbose,fallback,native_layer_norm,f32,8x256x384,non_contiguous
hcops_verbose,exec,adam_step_,f32,1000,2,0.5,hcops:avx512,
hcops_verbose,exec,adam_step_,f32,1000,2,0.5,hcops:avx512,
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,1.2,10,hcops:avx512,tile=32x12
hcops_verbose,exec,adam_step_,f32,1000,2,0.5,hcops:avx512,
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,1.2,10,hcops:avx512,tile=32x12
hcops_verbose,exec,adam_step_,f32,1000,2,0.5,hcops:avx512,
hcops_verbose,exec,sgemm_,N,N,100,200,300,1,100,300,0,100,2,1.2,10,hcops:avx512,tile=32x12
"""


def step_logs():
    """--skip-steps (steps closed by runs of optimizer lines) and the FLOP-limit lines."""
    path = os.path.join(TMP, "steps.log")
    with open(path, "w") as f:
        f.write(STEPS)
    p = prof(path, "--peak-gflops", "100", "--bandwidth", "10", "--skip-steps", "1", "--step-seconds", "0.01")
    print(p.stdout)
    check(p.returncode == 0 and "5 calls, 4.6 ms profiled" in p.stdout,
          "steps: the first step (its two optimizer lines) left out")
    check("non_contiguous" not in p.stdout, "steps: the first step's fallback left out")
    # 3 x 2*100*200*300 flops = 0.036 GFLOP, at 100 GFLOPS 0.36 ms; the last
    # call follows the last step's end: per step, the 2 complete steps' 0.024
    # GFLOP, 0.12 ms each; 0.12 / 10 ms = 1 %
    check("FLOP limit: 0.036 GFLOP" in p.stdout and "take 0.36 ms at the peak" in p.stdout and
          "those calls took 3.6 ms (10% of the limit's rate)" in p.stdout, "steps: the FLOP limit of the calls")
    check("per step (2 in the log): 0.012 GFLOP, limit 0.12 ms, profiled calls 1.7 ms" in p.stdout and
          "runs at 1% of its FLOP limit" in p.stdout, "steps: per step (complete steps only), the step's fraction")
    p = prof(path, "--no-peak")
    check(p.returncode == 0 and "Operators PyTorch ran itself" in p.stdout and "FLOP limit: n/a" in p.stdout,
          "steps: nothing skipped by default; no limit without a peak")
    p = prof(path, "--no-peak", "--skip-steps", "3")
    check(p.returncode == 2 and "has 3 step(s), so none would be left" in p.stderr, "steps: too many skipped")
    p = prof(os.path.join(TMP, "hand.log"), "--no-peak", "--skip-steps", "1")
    check(p.returncode == 2 and "no optimizer lines" in p.stderr, "steps: a log without optimizer lines")


def bad_logs():
    good = HAND.splitlines(keepends=True)
    cases = {
        "garbage": ("nothing but\nprogram output\n", 2, ":", "nothing to profile"),
        "empty": ("", 2, ":", "nothing to profile"),
        "badnumber": ("".join(good[:4]) + "hcops_verbose,exec,sgemm_,N,N,1x,2,3,1,1,3,0,1,2,0.1,1,hcops:avx512,x\n",
                      2, ":5:", "m is not a number"),
        "badtime": ("".join(good[:4]) + "hcops_verbose,exec,gelu,f32,10x10,2,-3,hcops:avx512,\n", 2, ":5:",
                    "not a time"),
        "short": ("".join(good[:6]) + "onednn_verbose,exec,cpu,matmul,brg\n", 2, ":7:", "fields"),
        "unknown": ("hcops_verbose,frobnicate,1\n", 2, ":1:", "unknown hcops_verbose line kind"),
        "truncated": ("".join(good[:5]) + "hcops_verbose,exec,sgemm_,N,N,100,2", 0, ":6:", "truncated"),
    }
    for name, (text, status, where, what) in cases.items():
        path = os.path.join(TMP, f"{name}.log")
        with open(path, "w") as f:
            f.write(text)
        p = prof(path, "--no-peak")
        msg = p.stderr.strip()
        check(p.returncode == status and f"{path}{where}" in msg and what in msg and msg.startswith("hcops-prof:"),
              f"bad log {name}: status {p.returncode} (want {status}), message {msg!r}")
    p = prof(os.path.join(TMP, "no-such.log"))
    check(p.returncode == 2 and "cannot read" in p.stderr, f"missing file: {p.stderr.strip()!r}")
    p = prof(os.path.join(TMP, "hand.log"), "--no-peak", "--csv", os.path.join(TMP, "no-dir", "x.csv"))
    check(p.returncode == 2 and "cannot write" in p.stderr, f"unwritable CSV: {p.stderr.strip()!r}")


def trace_tests():
    """hcops-prof on torch.profiler Chrome traces: a hand-written one with
    known costs, bad ones, and a real one from the PyTorch this test runs."""
    def ev(name, ts, dur, dims, types, tid=1):
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": tid, "pid": 1,
                "args": {"Input Dims": dims, "Input type": types}}
    f32, b16 = "float", "c10::BFloat16"
    events = [
        ev("aten::linear", 0, 100, [[64, 32], [16, 32], [16]], [f32, f32, f32]),
        ev("aten::t", 1, 1, [[16, 32]], [f32]),
        ev("aten::addmm", 5, 90, [[16], [64, 32], [32, 16], [], []], [f32, f32, f32, "Scalar", "Scalar"]),
        ev("aten::copy_", 200, 10, [[64, 16], [64, 16], []], [b16, f32, "Scalar"]),
        ev("aten::native_layer_norm", 300, 50, [[8, 64], [], [64], [64], []], [f32, "ScalarList", f32, f32, "Scalar"]),
        ev("aten::empty_like", 301, 2, [[8, 64], [], [], [], [], []], [f32, "", "", "", "", ""]),
        ev("aten::fill_", 400, 4, [[100], []], [f32, "Scalar"]),
        ev("aten::sum", 500, 5, [[10, 10], [], [], []], [f32, "", "", ""]),
        ev("aten::_scaled_dot_product_flash_attention_for_cpu", 600, 50,
           [[2, 3, 16, 8], [2, 3, 20, 8], [2, 3, 20, 8], [], [], [], []], [b16, b16, b16, "Scalar", "Scalar", "", ""]),
        ev("aten::mul", 10, 5, [[4, 4], [4, 4]], [f32, f32], tid=2),  # another thread: not the linear's child
        # out= overloads, as inductor's graphs call them: the destination is
        # the result written, not an operand.
        ev("aten::mm", 700, 20, [[64, 32], [32, 16], [64, 16]], [f32, f32, f32]),
        ev("aten::addmm", 800, 30, [[16], [64, 32], [32, 16], [], [], [64, 16]], [b16, b16, b16, "Scalar", "Scalar",
                                                                                b16]),
        ev("aten::bmm", 900, 10, [[2, 8, 4], [2, 4, 6], [2, 8, 6]], [f32, f32, f32]),
    ]
    path = os.path.join(TMP, "trace.json")
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events + [{"ph": "M", "name": "process_name"}]}, f)
    csv_path = os.path.join(TMP, "trace.csv")
    p = prof(path, "--peak-gflops", "100", "--bandwidth", "10", "--csv", csv_path, "--top", "0")
    check(p.returncode == 0 and "roofline limit" in p.stdout and "FLOP limit" in p.stdout,
          f"trace: status {p.returncode}, summary lines ({p.stderr.strip()[:200]})")
    rows = {(r["operator"], r["dtype"]): r for r in read_csv(csv_path)} if os.path.exists(csv_path) else {}
    want = {  # (operator, dtype): (self ms, GFLOP, GB)
        ("aten::linear", "f32"): (0.009, 0, 0),
        ("aten::addmm", "f32"): (0.090, 2 * 64 * 32 * 16 / 1e9, ((16 + 64 * 32 + 32 * 16) * 4 + 64 * 16 * 4) / 1e9),
        ("aten::copy_", "bf16"): (0.010, 64 * 16 / 1e9, (64 * 16 * 2 + 64 * 16 * 4 + 64 * 16 * 2) / 1e9),
        ("aten::native_layer_norm", "f32"): (0.048, 8 * 64 / 1e9, ((8 * 64 + 64 + 64) * 4 + 8 * 64 * 4) / 1e9),
        ("aten::fill_", "f32"): (0.004, 100 / 1e9, 400 / 1e9),
        ("aten::sum", "f32"): (0.005, 100 / 1e9, 400 / 1e9),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "bf16"):
            (0.050, 4 * 2 * 3 * 16 * 20 * 8 / 1e9, (2 * 3 * 16 * 8 + 2 * 2 * 3 * 20 * 8) * 2 * 2 / 1e9),
        ("aten::mul", "f32"): (0.005, 16 / 1e9, 3 * 16 * 4 / 1e9),
        ("aten::mm", "f32"): (0.020, 2 * 64 * 32 * 16 / 1e9, ((64 * 32 + 32 * 16) * 4 + 64 * 16 * 4) / 1e9),
        ("aten::addmm", "bf16"): (0.030, 2 * 64 * 32 * 16 / 1e9, ((16 + 64 * 32 + 32 * 16) * 2 + 64 * 16 * 2) / 1e9),
        ("aten::bmm", "f32"): (0.010, 2 * 2 * 8 * 4 * 6 / 1e9, ((2 * 8 * 4 + 2 * 4 * 6) * 4 + 2 * 8 * 6 * 4) / 1e9),
    }
    for key, (ms, gflop, gb) in want.items():
        r = rows.get(key)
        ok = r is not None and abs(float(r["self_ms"]) - ms) < 1e-3 and abs(float(r["gflop"]) - gflop) < 1e-7 \
            and abs(float(r["gb"]) - gb) < 1e-8
        if ok:
            limit = max(gflop / 100, gb / 10) * 1e3
            ok = abs(float(r["limit_ms"]) - limit) < 1e-4
        check(ok, f"trace: {key[0]} {key[1]}: self ms, GFLOP, GB and limit as computed by hand ({r})")
    check(("aten::t", "f32") in rows and float(rows[("aten::t", "f32")]["gb"]) == 0, "trace: a view has no cost")
    p = prof(path, "--peak-gflops", "100", "--bandwidth", "10", "--steps", "2", "--csv", csv_path)
    rows2 = {(r["operator"], r["dtype"]): r for r in read_csv(csv_path)}
    check(float(rows2[("aten::addmm", "f32")]["calls"]) == 0.5 and "2 steps" in p.stdout,
          "trace --steps 2: per-step figures")
    for name, text, what in [("bad-json", '{"traceEvents": [{"ph": "X",', "not a JSON trace"),
                             ("no-ops", '{"traceEvents": [{"ph": "M", "name": "x"}]}', "no CPU operator events")]:
        bad = os.path.join(TMP, name + ".json")
        with open(bad, "w") as f:
            f.write(text)
        p = prof(bad, "--no-peak")
        check(p.returncode == 2 and what in p.stderr and p.stderr.startswith("hcops-prof:"),
              f"trace {name}: status {p.returncode}, message {p.stderr.strip()!r}")
    # A real trace: a Linear, GeLU and a cast, forward and backward, from the
    # PyTorch 2.x of the build (Debian's 1.13 writes a legacy trace without
    # input shapes: hcops-prof says so).
    real = os.path.join(TMP, "real.json")
    script = ("import torch\nfrom torch.profiler import profile\n"
              "x = torch.randn(256, 128, requires_grad=True); lin = torch.nn.Linear(128, 64)\n"
              "with profile(record_shapes=True) as p:\n"
              "    torch.nn.functional.gelu(lin(x)).to(torch.bfloat16).float().sum().backward()\n"
              f"p.export_chrome_trace({real!r})\n")
    r = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, timeout=time_limits.limit(300))
    if r.returncode == 0:
        p = prof(real, "--no-peak")
        check(p.returncode == 2 and "no input shapes" in p.stderr, f"{PYTHON}'s torch's trace without shapes: "
              f"status {p.returncode}, {p.stderr.strip()[:200]!r}")
    torch2 = os.environ.get("HCOPS_TORCH2_PYTHON")
    if not torch2:
        print("skip: a real trace with shapes: no PyTorch 2.x in this build (HCOPS_TORCH2_PYTHON)")
        return
    r = subprocess.run([torch2, "-c", script], capture_output=True, text=True, timeout=time_limits.limit(300))
    if r.returncode != 0:
        check(False, f"a real trace from {torch2}: {r.stderr.strip()[-300:]}")
        return
    p = prof(real, "--peak-gflops", "100", "--bandwidth", "10", "--csv", csv_path, "--top", "0")
    rows = {(r["operator"], r["dtype"]): r for r in read_csv(csv_path)} if p.returncode == 0 else {}
    mm = [r for (name, _), r in rows.items() if name in ("aten::addmm", "aten::mm")]
    check(p.returncode == 0 and any(abs(float(r["gflop"]) - 2 * 256 * 128 * 64 / 1e9) < 1e-9 for r in mm),
          f"real trace: the Linear's product with 2 m n k flops ({[(r['operator'], r['gflop']) for r in mm]})")
    check(any(name == "aten::gelu" and float(r["gb"]) > 0 for (name, _), r in rows.items()),
          "real trace: GeLU with its bytes")


def machine_cache():
    """The measured peaks are cached per CPU and boot: the same boot reads
    them back, another boot (a guest moved, a clock changed) measures again
    and replaces the entry."""
    sys.path.insert(0, os.path.join(SRC, "python"))
    from hcops.prof import machine
    fake = os.path.join(TMP, "fake-peak")
    runs = os.path.join(TMP, "fake-peak.runs")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\necho run >> {runs}\n"
                "echo '{\"avx512\": {\"f32\": {\"1\": 100.0, \"2\": 200.0}}}'\n")
    os.chmod(fake, 0o755)
    # How busy the CPUs are is machine_busy's subject: here it is unknown, so
    # that tests running beside this one cannot make a measurement "busy".
    def unknown():
        return None
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "machine-cache")
    try:
        def count():
            if not os.path.exists(runs):
                return 0
            with open(runs) as f:
                return sum(1 for _ in f)
        first = machine.Machine(lambda name: fake, ticks=unknown).peak("f32", 2)
        again = machine.Machine(lambda name: fake, ticks=unknown).peak("f32", 2)
        check(first == 200.0 and again == 200.0 and count() == 1,
              f"peaks measured once and read back on the same boot ({first}, {again}, {count()} run(s))")
        path = os.path.join(os.environ["XDG_CACHE_HOME"], "hcops", "prof-machine.json")
        with open(path) as f:
            cache = json.load(f)
        for entry in cache.values():
            entry["boot"] = "an-earlier-boot"
            entry["peak"]["f32:2"] = 1.0
        with open(path, "w") as f:
            json.dump(cache, f)
        other = machine.Machine(lambda name: fake, ticks=unknown).peak("f32", 2)
        with open(path) as f:
            boots = [e.get("boot") for e in json.load(f).values()]
        check(other == 200.0 and count() == 2 and boots == [machine.boot_id()],
              f"another boot's peaks measured again and replaced ({other}, {count()} run(s), boots {boots})")
        # A program of another architecture (a cross build's, run by QEMU)
        # must not read this CPU's entry: its own ELF header, e_machine
        # changed to one no CPU has, is refused by exec, so it measures
        # (and fails) instead of returning the 200 cached above.
        with open("/proc/self/exe", "rb") as f:
            head = bytearray(f.read(64))
        order = "little" if head[5] == 1 else "big"
        foreign = os.path.join(TMP, "foreign-peak")
        with open(foreign, "wb") as f:
            f.write(head[:18] + (0x7ffe).to_bytes(2, order) + head[20:])
        os.chmod(foreign, 0o755)
        native = os.path.join(TMP, "native-elf")
        with open(native, "wb") as f:
            f.write(head)
        key = machine.program_key(foreign)
        check(machine.program_key(native) == "" and machine.program_key(fake) == ""
              and str(0x7ffe) in key and "QEMU_CPU=" in key,
              f"a foreign ELF program is keyed apart ({key!r}), this architecture's and scripts are not")
        try:
            got = machine.Machine(lambda name: foreign, ticks=unknown).peak("f32", 2)
        except machine.MachineError as e:
            got = f"MachineError: {e}"
        check(got != 200.0 and count() == 2, f"a foreign program does not read this CPU's cached peak ({got})")
        m = machine.Machine(lambda name: fake, ticks=unknown)
        m.peak("f32", 2)
        check("peak measured by hcops-peak (cached)" in m.sources, f"read from the cache: the source says so ({m.sources})")
        # A cache that cannot be written (here a file where its directory
        # would be): measured, used, kept for the object's next calls, and
        # the source line says it was not cached rather than "(cached)".
        blocker = os.path.join(TMP, "not-a-directory")
        open(blocker, "w").close()
        os.environ["XDG_CACHE_HOME"] = blocker
        m = machine.Machine(lambda name: fake, ticks=unknown)
        first, again = m.peak("f32", 2), m.peak("f32", 2)
        unwritten = [s for s in m.sources if s.startswith("peak measured by hcops-peak (not cached: ")]
        check(first == 200.0 and again == 200.0 and count() == 3 and len(unwritten) == 1 and blocker in unwritten[0],
              f"an unwritable cache: measured once, used, and the source says not cached ({m.sources}, {count()} runs)")
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved


def bf16_peak_route():
    """A bf16 product's peak is the faster of the CPU's bf16 instructions
    and its f32 FMAs: HCOps widens bf16 onto the FMAs where vdpbf16ps does
    fewer flops (an Intel Xeon without AMX), so reading bf16 against the
    slower vdpbf16ps would put products above 100 %."""
    sys.path.insert(0, os.path.join(SRC, "python"))
    from hcops.prof import machine
    saved = os.environ.get("XDG_CACHE_HOME")
    try:
        for name, dot, want in (("slow-dot", 100.0, 200.0), ("fast-dot", 400.0, 400.0)):
            fake = os.path.join(TMP, f"peak-{name}")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho '{\"avx512\": {\"f32\": {\"2\": 200.0}}, "
                        f"\"avx512_bf16\": {{\"bf16\": {{\"2\": {dot}}}}}}}'\n")
            os.chmod(fake, 0o755)
            os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, f"cache-{name}")
            m = machine.Machine(lambda _: fake, ticks=lambda: None)
            got = m.peak("bf16", 2)
            said = any("f32 FMA peak" in s for s in m.sources)
            check(got == want and said == (dot < 200.0),
                  f"bf16 peak with vdpbf16ps at {dot} and FMAs at 200: {got} (sources {sorted(m.sources)})")
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved


def machine_busy():
    """A peak or bandwidth measured while other processes took the CPUs is
    not cached: measured again (up to MEASURE_ATTEMPTS times), the best of
    the attempts used for that run alone, with a warning; a quiet attempt
    ends the retries and is cached. The CPUs' time is given by a stand-in
    for /proc/stat: each reading 1000 ticks later, `busy` of them others'."""
    sys.path.insert(0, os.path.join(SRC, "python"))
    from hcops.prof import machine
    import contextlib
    import io
    runs = os.path.join(TMP, "busy-peak.runs")
    fake = os.path.join(TMP, "busy-peak")
    with open(fake, "w") as f:  # the n-th run: 2 threads 10 n GFLOPS but 15 on the 2nd; 1 thread 50 - n
        f.write(f"#!/bin/sh\necho run >> {runs}\nn=$(wc -l < {runs})\n"
                '[ $n = 2 ] && two=15 || two=$((n * 10))\n'
                'echo "{\\"avx512\\": {\\"f32\\": {\\"1\\": $((50 - n)), \\"2\\": $two}}}"\n')
    os.chmod(fake, 0o755)
    stream = os.path.join(TMP, "busy-stream")
    with open(stream, "w") as f:
        f.write(f"#!/bin/sh\necho run >> {runs}\n" "echo '{\"triad_gbs_best\": 7.5}'\n")
    os.chmod(stream, 0o755)

    def clock(*busy_shares):
        """Readings 1000 ticks apart, the n-th with busy_shares[n] of them
        others' (the last share from then on)."""
        now, shares = [0, 0], list(busy_shares)

        def ticks():
            share = shares.pop(0) if len(shares) > 1 else shares[0]
            now[0] += round(1000 * share)
            now[1] += 1000
            return tuple(now)
        return ticks

    def count():
        with open(runs) as f:
            return sum(1 for _ in f)

    def find(name):
        return stream if name == "hcops-stream" else fake
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = os.path.join(TMP, "busy-cache")
    path = os.path.join(os.environ["XDG_CACHE_HOME"], "hcops", "prof-machine.json")
    try:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            m = machine.Machine(find, ticks=clock(0.5))
            got, again, one, bw = m.peak("f32", 2), m.peak("f32", 2), m.peak("f32", 1), m.bandwidth(2)
        n = machine.MEASURE_ATTEMPTS
        check(n == 3 and got == 30 and again == got and one == 49 and count() == 2 * n,
              f"busy: measured {n} times, each figure's best kept (2 threads 10, 15, 30: {got}; "
              f"1 thread 49, 48, 47: {one}), read again from memory ({again}, {count()} runs)")
        check(bw == 7.5 and "not cached" in err.getvalue() and err.getvalue().startswith("hcops: hcops-peak ran")
              and "hcops-stream" in err.getvalue(), f"busy: the bandwidth too, and a warning each ({err.getvalue()!r})")
        check("peak measured by hcops-peak (busy machine: not cached)" in m.sources, f"busy: the source says so ({m.sources})")
        entries = []
        if os.path.exists(path):
            with open(path) as f:
                entries = list(json.load(f).values())
        check(all(not e["peak"] and not e["triad"] for e in entries), f"busy: nothing cached ({entries})")
        # Quiet at the second attempt: that attempt's run ends the retries,
        # and the best of both is cached.
        before = count()
        with contextlib.redirect_stderr(io.StringIO()) as err2:
            quiet = machine.Machine(find, ticks=clock(0.5, 0.5, 0.0)).peak("f32", 2)
        cached = machine.Machine(find, ticks=clock(0.5)).peak("f32", 2)
        check(quiet == 10 * (before + 2) and count() == before + 2 and cached == quiet and not err2.getvalue(),
              f"quiet at the second attempt: cached and read back ({quiet}, {cached}, {count() - before} runs)")
        # The threshold itself, with the measuring program's own time given
        # (none): others' ticks beyond NOISE_TICKS, over all ticks.
        def none():
            return 0
        noise = machine.NOISE_TICKS / 1000
        at = machine.others_share(lambda: None, clock(machine.QUIET_SHARE + noise), none)[1]
        above = machine.others_share(lambda: None, clock(machine.QUIET_SHARE + noise + 0.01), none)[1]
        check(at is not None and abs(at - machine.QUIET_SHARE) < 1e-9 and above > machine.QUIET_SHARE,
              f"others' share read from the ticks: at the threshold {at}, above it {above}")
        calls = []
        got, ok = machine.measure_quietly(lambda: calls.append(1) or {"x": 1.0},
                                          "test", clock(machine.QUIET_SHARE + noise), none)
        check(ok and len(calls) == 1, f"at the threshold a measurement is quiet ({len(calls)} attempt(s))")
        with contextlib.redirect_stderr(io.StringIO()):
            got, ok = machine.measure_quietly(lambda: calls.append(1) or {"x": 1.0},
                                              "test", clock(machine.QUIET_SHARE + noise + 0.01), none)
        check(not ok and len(calls) == 1 + machine.MEASURE_ATTEMPTS, f"above it, busy ({len(calls) - 1} attempts)")
        # A later attempt that fails keeps what the earlier ones measured.
        attempts = iter([{"x": 2.0}, None])

        def flaky():
            got = next(attempts)
            if got is None:
                raise machine.MachineError("hcops-peak failed")
            return got
        with contextlib.redirect_stderr(io.StringIO()):
            got, ok = machine.measure_quietly(flaky, "test", clock(0.5), none)
        check(got == {"x": 2.0} and not ok, f"a failing second attempt keeps the first's figures ({got}, {ok})")
        _, share = machine.others_share(lambda: None, lambda: None)
        check(share is None, "no /proc/stat: the share is unknown, and a measurement is taken as it is")
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved


with tempfile.TemporaryDirectory(prefix="hcops-prof-test.") as TMP:
    machine_cache()
    bf16_peak_route()
    machine_busy()
    hand_logs()
    step_logs()
    bad_logs()
    trace_tests()
    real_logs()
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
