"""The AutoMem plan: which tensors are on the fast tier at each layer event of
a training step, and the moves that get them there.

Pure Python, no torch: it works on a recorded sequence of events and the sizes
of the tensors each uses, so it is tested on any machine and topology.

A step is a cycle of events: forward calls of the layers in execution order,
then their backward in the order autograd ran them, then the next step's
forward again. At event i the layer's own tensors must be on the fast tier
(they are fetched now if they are not: a miss, the compute waits), and the
next event's are prefetched, on the helper core, while layer i computes. What
is resident never exceeds the budget; to make room, the resident tensor whose
next use is farthest away is offloaded first (Belady's rule, optimal for
tensors of equal size, and what keeps a model that fits wholly resident: then
nothing moves after the first step). A layer whose own tensors exceed the
budget keeps them in DDR.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    kind: str          # "F" forward, "B" backward
    unit: int          # index of the layer (module) in Trace.units
    keys: tuple        # tensor keys the layer uses, each once


@dataclass
class Actions:
    """What the runtime does at one event, in this order: offload `evict`
    (asynchronously, so the budget holds before anything comes in), fetch
    `fetch` now (the layer's own tensors that are not resident: the compute
    waits), wait for the layer's pending prefetches, and start prefetching
    `prefetch` (the next event's tensors)."""
    evict: list = field(default_factory=list)
    fetch: list = field(default_factory=list)
    prefetch: list = field(default_factory=list)
    resident: frozenset = frozenset()   # on the fast tier once these moves are done


@dataclass
class Plan:
    events: list                 # the cycle, events with at least one key
    sizes: dict                  # key -> bytes
    budget: int
    actions: list                # parallel to events, steady state (second cycle)
    initial: frozenset           # resident when the steady cycle starts
    too_large: list              # units whose own tensors exceed the budget (kept in DDR)
    high_water: int              # largest resident bytes

    def resident_bytes(self, i):
        return sum(self.sizes[k] for k in self.actions[i].resident)


def _next_use(events, keys_of, pos, key):
    """Distance from pos to the next event after pos that uses key (cyclic)."""
    n = len(events)
    for d in range(1, n + 1):
        if key in keys_of[(pos + d) % n]:
            return d
    return n + 1


def make_plan(events, sizes, budget):
    """events: Event list of one step (a cycle); sizes: key -> bytes;
    budget: bytes the plan may keep on the fast tier."""
    budget = max(0, int(budget))
    too_large = []
    kept = []
    seen_large = set()
    for ev in events:
        own = sum(sizes[k] for k in ev.keys)
        if own > budget:
            if ev.unit not in seen_large:
                seen_large.add(ev.unit)
                too_large.append(ev.unit)
            continue
        if ev.keys:
            kept.append(ev)
    n = len(kept)
    if n == 0:
        return Plan([], dict(sizes), budget, [], frozenset(), too_large, 0)
    keys_of = [frozenset(ev.keys) for ev in kept]

    resident = set()
    actions = []
    high = 0
    initial = frozenset()
    for cycle in range(2):
        if cycle == 1:
            initial = frozenset(resident)
            actions = []
        for i in range(n):
            need = keys_of[i]
            nxt = keys_of[(i + 1) % n]
            act = Actions()

            def room_for(wanted, protect):
                """Offload farthest-used residents until `wanted` fits; False if it cannot."""
                extra = sum(sizes[k] for k in wanted if k not in resident)
                used = sum(sizes[k] for k in resident)
                victims = sorted((k for k in resident if k not in protect),
                                 key=lambda k: (-_next_use(kept, keys_of, i, k), k))
                if used - sum(sizes[v] for v in victims) + extra > budget:
                    return False  # no offload would make room: offload nothing for it
                for v in victims:
                    if used + extra <= budget:
                        break
                    resident.discard(v)
                    act.evict.append(v)
                    used -= sizes[v]
                return used + extra <= budget

            room_for(need, need)  # always possible: need alone fits (too_large filtered)
            act.fetch = sorted(k for k in need if k not in resident)
            resident.update(need)
            # The next layer's tensors, as many as fit beside this layer's:
            # in the order the next layer lists them.
            for k in kept[(i + 1) % n].keys:
                if k in resident:
                    continue
                if room_for({k}, need | {j for j in nxt if j in resident}):
                    act.prefetch.append(k)
                    resident.add(k)
            act.resident = frozenset(resident)
            high = max(high, sum(sizes[k] for k in resident))
            actions.append(act)
    return Plan(kept, dict(sizes), budget, actions, initial, too_large, high)
