"""Running one benchmark process: each configuration in a process of its own, so
that no library, allocator or thread pool of one run is left in the next."""
import json
import os
import subprocess

# Every BLAS/OpenMP runtime reads one of these: the same thread count for all.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS")


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
