"""Training steps in a log. HCOps's fused Adam/AdamW (shim/torch/adam.cpp)
prints one exec line per parameter group when the optimizer steps, the last
thing a training step does: a run of consecutive optimizer lines closes a
step. --skip-steps drops the first steps (warm-up: first-touch page faults,
thread start-up, caches) so that the profile is of the steady state."""
import dataclasses

OPTIMIZER_OPS = ("adam_step_",)


class StepError(Exception):
    pass


def _is_optimizer(rec):
    return rec.part == "operator" and rec.name.startswith(OPTIMIZER_OPS)


def ends(log):
    """The line numbers that close a step: the last of each run of optimizer
    lines (records in line order). In a log of several MPI ranks, the lowest
    rank's: another rank's lines may fall between one rank's optimizer lines."""
    ranks = {r.rank for r in log.records if r.rank >= 0}
    records = sorted((r for r in log.records if not ranks or r.rank == min(ranks)), key=lambda r: r.lineno)
    return [rec.lineno for i, rec in enumerate(records)
            if _is_optimizer(rec) and (i + 1 == len(records) or not _is_optimizer(records[i + 1]))]


def complete(log):
    """The log up to the line that closes its last step (what per-step figures
    divide), or None when it has no step."""
    closes = ends(log)
    if not closes:
        return None
    return dataclasses.replace(log, records=[r for r in log.records if r.lineno <= closes[-1]])


def skip(log, n):
    """The log without its first n steps (records and fallbacks up to the line
    that closes step n); StepError if it has fewer than n + 1 steps' worth."""
    if n <= 0:
        return log
    closes = ends(log)
    if not closes:
        raise StepError("--skip-steps: the log has no optimizer lines to tell its steps apart (HCOps's fused "
                        "Adam/AdamW prints them: run under hcops-run with HCOPS_VERBOSE=1)")
    if len(closes) <= n:
        raise StepError(f"--skip-steps {n}: the log has {len(closes)} step(s), so none would be left")
    cut = closes[n - 1]
    fallbacks = {}
    kept_lines = [(ln, key) for ln, key in log.fallback_lines if ln > cut]
    for _, key in kept_lines:
        fallbacks[key] = fallbacks.get(key, 0) + 1
    return dataclasses.replace(log, records=[r for r in log.records if r.lineno > cut], fallbacks=fallbacks,
                               fallback_lines=kept_lines)
