"""Running one benchmark process: each configuration in a process of its own, so
that no library, allocator or thread pool of one run is left in the next."""
import json
import os
import subprocess
import tempfile
import time

# Every BLAS/OpenMP runtime reads one of these: the same thread count for all.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS")


class RunError(Exception):
    """A child run failed; the message names the command and ends with its last output."""


def child_env(threads=None, drop=(), **extra):
    """The caller's environment for a child: without LD_PRELOAD (each configuration
    says what it preloads) and the variables whose names start with one of drop,
    with threads for every runtime when given, and extra on top."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith(tuple(drop))}
    if threads is not None:
        env.update((var, str(threads)) for var in THREAD_VARS)
    env.update(extra)
    return env


def command_line(cmd):
    return " ".join(cmd)


def tail(proc, lines):
    return "\n".join((proc.stdout + proc.stderr).splitlines()[-lines:])


def run(cmd, env, check=True, tail_lines=15):
    """The finished process (output captured as text); RunError if it exited
    non-zero and check is set."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RunError(f"{command_line(cmd)} exited {proc.returncode}:\n{tail(proc, tail_lines)}")
    return proc


def run_measured(cmd, env, check=True, tail_lines=15):
    """run(), also measuring the child: the process returned has wall_s (start to
    exit) and max_rss_kib, its peak resident set (ru_maxrss from wait4: that
    child's own, or a descendant's it waited for if larger). Its output goes to
    files, not pipes: the child is reaped by wait4 here, not by subprocess."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        proc = subprocess.CompletedProcess(cmd, child.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
    proc.wall_s = wall
    proc.max_rss_kib = usage.ru_maxrss
    if check and proc.returncode != 0:
        raise RunError(f"{command_line(cmd)} exited {proc.returncode}:\n{tail(proc, tail_lines)}")
    return proc


def json_result(proc):
    """The last JSON line of the process's standard output: the benchmarks print
    their result last, after anything a preloaded library may have said."""
    lines = [line for line in proc.stdout.splitlines() if line.lstrip().startswith("{")]
    if not lines:
        raise RunError(f"{command_line(proc.args)} printed no JSON line (exit status {proc.returncode}):\n"
                       f"{tail(proc, 15)}")
    return json.loads(lines[-1])


def lines_starting(proc, prefix):
    """The lines of the process's output (standard output, then error) that start with prefix."""
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(prefix)]
