"""What perf/ops_bench.py runs the operators in: the PyTorch workers
(perf/ops_worker.py, HCOps and stock PyTorch), oneDNN's primitive
(build/perf/hcops-dnnl-ops) and the STREAM triad (build/tools/hcops-stream)."""
import json
import os
import subprocess

from .build import PERF, PYTHON, program
from .child import RunError, child_env, command_line, json_result, run

DNNL_OPS = program("hcops-dnnl-ops")
STREAM = program("hcops-stream")
WORKER = os.path.join(PERF, "ops_worker.py")
# Left out of every child: per-call lines and a reduced operator list would
# change what is timed. HCOPS_ISA is kept: it selects the kernel family measured.
DROPPED = ("HCOPS_VERBOSE", "HCOPS_OPS", "ONEDNN_VERBOSE", "DNNL_VERBOSE")


class Worker:
    """A perf/ops_worker.py process (--hcops or --stock) answering requests
    until closed. OMP_NUM_THREADS is the largest thread count of the run: each
    request sets its own with torch.set_num_threads."""

    def __init__(self, kind, max_threads):
        self.kind = kind
        self.cmd = [PYTHON, WORKER, f"--{kind}"]
        env = child_env(threads=max_threads, drop=DROPPED)
        self.proc = subprocess.Popen(self.cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        hello = self._answer()
        self.torch_version, self.hcops_error = hello["torch"], hello["hcops"]

    def _answer(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RunError(f"{command_line(self.cmd)} exited {self.proc.wait()} (its error output is above)")
        return json.loads(line)

    def request(self, **req):
        """The worker's answer to req; RunError naming the request if it failed."""
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        if "error" in answer:
            raise RunError(f"{self.kind} worker, {json.dumps(req)}: {answer['error']}")
        return answer

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self.proc.wait()


def dnnl(binary, case, iters, reps, dims=None, dump=None):
    """hcops-dnnl-ops' JSON result for case on case.threads OpenMP threads:
    ns per call, impl; with dump, the files of its arguments (on dims, e.g.
    "64x1536", instead of the case's shape)."""
    cmd = [binary, case.op, case.dir, case.dtype, dims or case.dims_text(), "--iters", str(iters), "--reps", str(reps)]
    if dump:
        cmd += ["--dump", dump]
    return json_result(run(cmd, child_env(threads=case.threads, drop=DROPPED)))


def triad(binary, threads, quick):
    """hcops-stream's best triad pass in bytes/s on threads threads."""
    cmd = [binary] + (["--mib", "32", "--reps", "5"] if quick else [])
    return json_result(run(cmd, child_env(threads=threads)))["triad_gbs_best"] * 1e9
