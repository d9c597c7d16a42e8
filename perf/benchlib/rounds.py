"""Configurations alternated round by round, each run in its own process, so that
drift in machine load hits all of them alike; results compared within a round."""
import math
import statistics


def rotated(configs, shift):
    """configs starting at index shift (modulo their number): round r runs them
    rotated by r, so that each one runs first in turn."""
    s = shift % len(configs)
    return configs[s:] + configs[:s]


def alternated(configs, r):
    """configs in order in even rounds, reversed in odd ones (A-B, then B-A, ...)."""
    return list(configs) if r % 2 == 0 else list(reversed(configs))


def run_rounds(n, configs, run, order=rotated):
    """n rounds of {config: run(config)}, in the order order(configs, round) gives
    (the dicts keep it)."""
    return [{name: run(name) for name in order(configs, r)} for r in range(n)]


def median_over(rounds, f):
    """The median over rounds of f(round): with f a ratio of two configurations in
    the same round, what the load of that round does to both cancels out."""
    return statistics.median(f(r) for r in rounds)


def rel_diff(a, b):
    """Relative difference; infinite when either is NaN/inf, so a NaN loss can never agree."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-30)
