"""AutoMem for one model: hooks that record a warm-up step, then move its
layers' tensors between the fast tier and DDR as the plan says, and set the
allocation phase (fast huge pages inside a layer's forward and backward).

Moves are page migrations (hcops_mem_move, mbind MPOL_MF_MOVE): a tensor's
address and contents never change, so results are bit for bit those without
AutoMem. The plan is a target, the runtime is state-based: at each event it
moves what is not where the plan wants it, so an evaluation pass, a layer
called out of order or a move the budget refused only costs a miss, never a
wrong placement for long.
"""
import collections
import threading
import time
import weakref

import torch

from . import config, stats
from .plan import Event, make_plan

FAST_POLICY = "fast,thp"
SLOW_POLICY = "ddr,thp"


class _Shared:
    """What every enabled model shares: the library, the budget, what is pinned."""

    def __init__(self, mem, fast, slow, budget):
        self.mem = mem
        self.fast, self.slow = fast, slow
        self.budget = budget
        self.pinned = 0
        # Outstanding asynchronous moves in the order the helper runs them:
        # (ticket, tensor kept alive until the move is done).
        self.tickets = collections.deque()
        self.lock = threading.Lock()

    def nbytes_ptr(self, t):
        return storage_span(t)

    def move_async(self, t, target):
        ptr, n = self.nbytes_ptr(t)
        try:
            ticket = self.mem.move_async(ptr, n, target)
        except (OSError, ValueError) as e:
            stats.add("failed_moves")
            config.warn_once("move", f"cannot queue a move to {target!r}: {e}; placement left as it is")
            return None
        self.tickets.append((ticket, t))
        return ticket

    def move_now(self, t, target):
        ptr, n = self.nbytes_ptr(t)
        try:
            self.mem.move(ptr, n, target)
            return True
        except (OSError, ValueError) as e:
            stats.add("failed_moves")
            config.warn_once("move", f"cannot move to {target!r}: {e}; placement left as it is")
            return False

    def wait(self, ticket):
        """Waits for `ticket` and collects every earlier one (the helper runs them in order)."""
        while self.tickets:
            t, _ = self.tickets[0]
            if t > ticket:
                break
            self.tickets.popleft()
            try:
                self.mem.wait(t)
            except (OSError, ValueError) as e:
                stats.add("failed_moves")
                config.warn_once("wait", f"a move failed: {e}; placement left as it is")

    def drain(self):
        if self.tickets:
            self.wait(self.tickets[-1][0])


class _Slot:
    """One tracked tensor: found again by attribute at each move, so a buffer
    the model reassigns is the new one."""

    __slots__ = ("owner", "name", "nbytes", "is_param")

    def __init__(self, owner, name, nbytes, is_param):
        self.owner, self.name, self.nbytes, self.is_param = owner, name, nbytes, is_param

    def tensor(self):
        t = getattr(self.owner, self.name, None)
        return t if isinstance(t, torch.Tensor) else None


class AutoMem:
    """Returned by hcops.automem.enable(model); see that function."""

    def __init__(self, model, shared, min_bytes):
        self.model_ref = weakref.ref(model)
        self.shared = shared
        self.min_bytes = min_bytes
        self.units = []          # modules with hooks, in registration order
        self.unit_names = []
        self.unit_keys = []      # per unit: keys of the tensors it uses directly
        self.slots = []          # key -> _Slot
        self.handles = []
        self.acc_nodes = []      # AccumulateGrad nodes with our hook, kept alive
        self.recording = True
        self.events = []
        self.plan = None
        self.positions = {}      # (kind, unit) -> sorted positions in plan.events
        self.cursor = 0
        self.resident = set()    # keys on (or on their way to) the fast tier
        self.pending = {}        # key -> ticket of its prefetch
        self.keep_grads = True
        self.in_backward = False
        self.phase_depth = threading.local()
        self.preloaded = shared.mem.preloaded
        self._index(model)

    # ---- set-up -------------------------------------------------------------

    def _index(self, model):
        by_storage = {}
        for name, module in model.named_modules():
            direct = [(n, t, True) for n, t in module.named_parameters(recurse=False) if t is not None]
            direct += [(n, t, False) for n, t in module.named_buffers(recurse=False) if t is not None]
            is_leaf = next(module.children(), None) is None
            if not direct and not is_leaf:
                continue
            keys = []
            for attr, t, is_param in direct:
                ptr, n = self.shared.nbytes_ptr(t)
                if n < self.min_bytes or ptr == 0:
                    continue
                key = by_storage.get(ptr)
                if key is None:  # shared parameters: one key, moved once
                    key = by_storage[ptr] = len(self.slots)
                    self.slots.append(_Slot(module, attr, n, is_param))
                if key not in keys:
                    keys.append(key)
            unit = len(self.units)
            self.units.append(module)
            self.unit_names.append(name or type(model).__name__)
            self.unit_keys.append(tuple(keys))
            self.handles.append(module.register_forward_pre_hook(self._make_pre(unit)))
            self.handles.append(module.register_forward_hook(self._make_post(unit)))
        for key, slot in enumerate(self.slots):
            t = slot.tensor()
            if slot.is_param and t.requires_grad and t.is_leaf:
                node = t.expand_as(t).grad_fn.next_functions[0][0]  # its AccumulateGrad
                node.register_hook(self._make_acc(key))
                self.acc_nodes.append(node)

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        self.acc_nodes = []  # our hooks die with the nodes' last reference from us
        self.shared.drain()
        for key in list(self.resident):
            self._unpin(key)
        self.recording = False
        self.plan = None

    # ---- allocation phases --------------------------------------------------

    def _push(self):
        if self.preloaded:
            self.shared.mem.push(FAST_POLICY.replace("fast", self.shared.fast, 1))
            self.phase_depth.n = getattr(self.phase_depth, "n", 0) + 1

    def _pop(self):
        if self.preloaded and getattr(self.phase_depth, "n", 0) > 0:
            self.shared.mem.pop()
            self.phase_depth.n -= 1

    # ---- hooks --------------------------------------------------------------

    def _make_pre(self, unit):
        def pre(module, inputs):
            self._push()
            if not torch.is_grad_enabled() and self.recording:
                return None
            if self.recording:
                self.events.append(Event("F", unit, self.unit_keys[unit]))
            elif self.plan is not None:
                self._event("F", unit)
            return None
        return pre

    def _make_post(self, unit):
        def post(module, inputs, output):
            self._pop()
            if not torch.is_grad_enabled():
                return None
            fired = [False]

            def grad_hook(grad):
                if not fired[0]:
                    fired[0] = True
                    self._backward(unit)
                return None
            for t in _tensors(output):
                if t.requires_grad:
                    t.register_hook(grad_hook)
            return None
        return post

    def _backward(self, unit):
        if not self.in_backward:
            self.in_backward = True
            self._push()
            torch.autograd.Variable._execution_engine.queue_callback(self._backward_done)
        if self.recording:
            self.events.append(Event("B", unit, self.unit_keys[unit]))
        elif self.plan is not None:
            self._event("B", unit)

    def _backward_done(self):
        self.in_backward = False
        while getattr(self.phase_depth, "n", 0) > 0:  # also what a forward that raised left
            self._pop()
        if self.recording and any(e.kind == "F" for e in self.events):
            self._finish_recording()

    def _make_acc(self, key):
        def acc(grad_inputs, grad_outputs):
            if self.plan is None or self.keep_grads:
                return
            p = self.slots[key].tensor()
            g = p.grad if p is not None else None
            if g is None or g.is_sparse:
                return
            if self.shared.move_async(g, self.shared.slow) is not None:
                n = self.shared.nbytes_ptr(g)[1]
                stats.add("offloaded", n)
                stats.add("grads_offloaded", n)
                stats.add("offloads")
        return acc

    # ---- the plan -----------------------------------------------------------

    def _finish_recording(self):
        self.recording = False
        sizes = {k: s.nbytes for k, s in enumerate(self.slots)}
        plan = make_plan(self.events, sizes, self.shared.budget)
        self.events = []
        for unit in plan.too_large:
            stats.info["in_ddr"] += 1
            own = sum(sizes[k] for k in self.unit_keys[unit])
            config.warn_once(f"too large {id(self)} {unit}",
                             f"layer {self.unit_names[unit]} uses {config.mib(own)}, more than the budget "
                             f"({config.mib(self.shared.budget)}): it stays in DDR")
        params = sum(s.nbytes for s in self.slots if s.is_param)
        self.keep_grads = sum(sizes.values()) + params <= self.shared.budget
        for pos, ev in enumerate(plan.events):
            self.positions.setdefault((ev.kind, ev.unit), []).append(pos)
        self.plan = plan
        config.info_once(f"plan {id(self)}",
                         f"plan for {type(self.model_ref()).__name__}: {len(plan.events)} layer events, "
                         f"{len(self.slots)} tensors of {config.mib(sum(sizes.values()))}, budget "
                         f"{config.mib(self.shared.budget)}, planned high-water {config.mib(plan.high_water)}, "
                         f"gradients {'kept' if self.keep_grads else 'offloaded'}")
        # Where the steady cycle starts: its first event's predecessor state.
        for key in range(len(self.slots)):
            if key not in plan.initial:
                self._offload(key)
        for key in sorted(plan.initial):
            self._prefetch(key)
        self.cursor = 0

    def _match(self, kind, unit):
        pos = self.positions.get((kind, unit))
        if not pos:
            return None
        for p in pos:
            if p >= self.cursor:
                return p
        return pos[0]

    def _event(self, kind, unit):
        pos = self._match(kind, unit)
        if pos is None:
            return
        plan = self.plan
        want = plan.actions[pos].resident
        need = plan.events[pos].keys
        for key in [k for k in self.resident if k not in want]:
            self._offload(key)
        for key in need:
            if key not in self.resident:
                self._fetch(key)
        waited = [self.pending.pop(k) for k in need if k in self.pending]
        if waited:
            t0 = time.perf_counter_ns()
            self.shared.wait(max(waited))
            stats.add("wait_ns", time.perf_counter_ns() - t0)
            stats.add("waits", len(waited))
        for key in plan.events[(pos + 1) % len(plan.events)].keys:
            if key in want and key not in self.resident:
                self._prefetch(key)
        self.cursor = pos + 1

    # ---- moves --------------------------------------------------------------

    def _room(self, key):
        if self.shared.pinned + self.slots[key].nbytes > self.shared.budget:
            stats.add("refused")
            return False
        return True

    def _pin(self, key):
        self.resident.add(key)
        self.shared.pinned += self.slots[key].nbytes
        stats.pin(self.slots[key].nbytes)

    def _unpin(self, key):
        self.resident.discard(key)
        self.pending.pop(key, None)
        self.shared.pinned -= self.slots[key].nbytes
        stats.pin(-self.slots[key].nbytes)

    def _prefetch(self, key):
        t = self.slots[key].tensor()
        if t is None or not self._room(key):
            return
        ticket = self.shared.move_async(t, self.shared.fast)
        if ticket is not None:
            self.pending[key] = ticket
            self._pin(key)
            stats.add("prefetched", self.slots[key].nbytes)
            stats.add("prefetches")

    def _fetch(self, key):
        t = self.slots[key].tensor()
        if t is None or not self._room(key):
            return
        self.shared.drain()  # an offload of this very range may still be queued
        t0 = time.perf_counter_ns()
        if self.shared.move_now(t, self.shared.fast):
            self._pin(key)
            stats.add("fetched", self.slots[key].nbytes)
            stats.add("fetches")
        stats.add("wait_ns", time.perf_counter_ns() - t0)

    def _offload(self, key):
        t = self.slots[key].tensor()
        was = key in self.resident
        if was:
            self._unpin(key)
        if t is not None and self.shared.move_async(t, self.shared.slow) is not None and was:
            stats.add("offloaded", self.slots[key].nbytes)
            stats.add("offloads")

    # ---- inspection ---------------------------------------------------------

    def layers(self):
        """(name, tensor bytes) of every layer AutoMem moves, in module order."""
        return [(n, sum(self.slots[k].nbytes for k in keys))
                for n, keys in zip(self.unit_names, self.unit_keys) if keys]


def storage_span(t):
    """(address, bytes) of the whole storage behind tensor t: pages are moved whole."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # torch >= 2.0 / 1.13
    return s.data_ptr(), s.nbytes()


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)
