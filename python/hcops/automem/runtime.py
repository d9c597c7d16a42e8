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
        # (ticket, the storage, kept alive until its move is done, so that no
        # other allocation can take its pages meanwhile).
        self.tickets = collections.deque()
        self.lock = threading.RLock()
        self.mark = 0  # the newest ticket at the previous layer event

    def nbytes_ptr(self, t):
        return storage_span(t)

    def move_async(self, t, target):
        ptr, n = self.nbytes_ptr(t)
        with self.lock:
            try:
                ticket = self.mem.move_async(ptr, n, target)
            except (OSError, ValueError) as e:
                stats.add("failed_moves")
                config.warn_once("move", f"cannot queue a move to {target!r}: {e}; placement left as it is")
                return None
            self.tickets.append((ticket, storage_of(t)))
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
        with self.lock:
            while self.tickets and self.tickets[0][0] <= ticket:
                t, _ = self.tickets.popleft()
                try:
                    self.mem.wait(t)
                except (OSError, ValueError) as e:
                    stats.add("failed_moves")
                    config.warn_once("wait", f"a move failed: {e}; placement left as it is")

    def reap(self):
        """At a layer event: collects the moves queued before the previous
        event (they had a layer's compute to run; rarely a wait), so tickets
        and the storages they hold never pile up."""
        with self.lock:
            if self.mark:
                self.wait(self.mark)
            self.mark = self.tickets[-1][0] if self.tickets else 0

    def drain(self):
        with self.lock:
            if self.tickets:
                self.wait(self.tickets[-1][0])


_hooked = weakref.WeakSet()  # modules with an AutoMem's hooks: a module shared by two models gets one set


class _Slot:
    """One tracked tensor: found again by attribute at each move, so a buffer
    the model reassigns (or a .data swapped) is the new one. The owner is held
    weakly: AutoMem never keeps a model alive."""

    __slots__ = ("owner", "name", "nbytes", "is_param")

    def __init__(self, owner, name, nbytes, is_param):
        self.owner, self.name, self.nbytes, self.is_param = weakref.ref(owner), name, nbytes, is_param

    def tensor(self):
        owner = self.owner()
        t = getattr(owner, self.name, None) if owner is not None else None
        return t if isinstance(t, torch.Tensor) else None


class AutoMem:
    """Returned by hcops.automem.enable(model); see that function."""

    def __init__(self, model, shared, min_bytes):
        self.model_name = type(model).__name__
        self.shared = shared
        self.min_bytes = min_bytes
        self.unit_names = []
        self.unit_keys = []      # per unit: keys of the tensors it uses directly
        self.nest = []           # per unit: how many phase-setting units contain it
        self.sets_phase = []     # per unit: its forward allocates on the fast tier
        self.slots = []          # key -> _Slot
        self.handles = []
        self.acc_nodes = []      # AccumulateGrad nodes with our hook, kept alive
        self.recording = True
        self.events = []
        self.plan = None
        self.first_unit = None   # the unit a step starts with
        self.positions = {}      # (kind, unit) -> sorted positions in plan.events
        self.cursor = 0
        self.resident = {}       # key -> bytes pinned (on, or on its way to, the fast tier)
        self.pending = {}        # key -> ticket of its prefetch
        self.keep_grads = True
        self.grads_reserved = 0  # bytes of gradients kept on the fast tier, counted in the budget
        self.tl = threading.local()  # per thread: depth (our phase pushes), in_backward
        self.preloaded = shared.mem.preloaded
        self._index(model)

    # ---- set-up -------------------------------------------------------------

    def _index(self, model):
        by_storage = {}
        names = []
        for name, module in model.named_modules():
            if module in _hooked:  # another model's AutoMem has it
                continue
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
            unit = len(self.unit_names)
            names.append(name)
            self.unit_names.append(name or self.model_name)
            self.unit_keys.append(tuple(keys))
            _hooked.add(module)
            self.handles.append(module.register_forward_pre_hook(self._make_pre(unit)))
            self.handles.append(module.register_forward_hook(self._make_post(unit)))
        # The model itself never sets the phase (unless it is a leaf): its
        # forward is the whole forward, not a layer (DiT's root owns
        # pos_embed). Every other unit does. A unit's phase depth in forward:
        # the phase-setting units around it (named_modules lists a parent
        # before its children).
        self.sets_phase = [name != "" or next(model.children(), None) is None for name in names]
        for name in names:
            self.nest.append(sum(1 for other in names if other not in ("", name) and name.startswith(other + ".")))
        for key, slot in enumerate(self.slots):
            t = slot.tensor()
            if slot.is_param and t.requires_grad and t.is_leaf:
                node = t.expand_as(t).grad_fn.next_functions[0][0]  # its AccumulateGrad
                node.register_hook(self._make_acc(key))
                self.acc_nodes.append(node)

    def release(self):
        """Gives back what this model holds of the budget (its tensors stay where they are)."""
        with self.shared.lock:
            for key in list(self.resident):
                self._unpin(key)
            self.shared.pinned -= self.grads_reserved
            stats.pin(-self.grads_reserved)
            self.grads_reserved = 0

    def remove(self):
        """disable(): hooks off, what is on the fast tier offloaded, the budget given back."""
        for h in self.handles:
            h.remove()
        self.handles = []
        self.acc_nodes = []  # our hooks die with the nodes' last reference from us
        for key in list(self.resident):
            self._offload(key)
        self.shared.drain()
        self.release()
        while self._depth() > 0:
            self._pop()
        self.recording = False
        self.plan = None

    # ---- allocation phases --------------------------------------------------

    def _depth(self):
        return getattr(self.tl, "depth", 0)

    def _in_backward(self):
        return getattr(self.tl, "in_backward", False)

    def _push(self):
        if not self.preloaded:
            return
        try:
            self.shared.mem.push(FAST_POLICY.replace("fast", self.shared.fast, 1))
        except (OSError, ValueError) as e:  # the thread's policy stack is full: no phase, never an error
            config.warn_once("push", f"cannot set the allocation phase ({e}); allocations keep their policy")
            return
        self.tl.depth = self._depth() + 1

    def _pop(self):
        if self._depth() > 0:
            try:
                self.shared.mem.pop()
            except (OSError, ValueError):
                pass
            self.tl.depth -= 1

    def _expected(self, unit):
        """Our pushes in force on this thread before `unit`'s own: the units
        around it, and backward's."""
        return self.nest[unit] + (1 if self._in_backward() else 0)

    # ---- hooks --------------------------------------------------------------

    def _make_pre(self, unit):
        def pre(module, inputs):
            if self._in_backward() and unit == self.first_unit:
                # A step starts while a backward is marked running: that
                # backward raised (its end callback never ran).
                self.tl.in_backward = False
                if self.recording:
                    self.events = []
            while self._depth() > self._expected(unit):  # what a forward that raised left
                self._pop()
            if self.sets_phase[unit]:
                self._push()
            if not torch.is_grad_enabled():
                return None
            if self.recording:
                if self.first_unit is None:
                    self.first_unit = unit
                self.events.append(Event("F", unit, self.unit_keys[unit]))
            elif self.plan is not None:
                self._event("F", unit)
            return None
        return pre

    def _make_post(self, unit):
        def post(module, inputs, output):
            if self.sets_phase[unit] and self._depth() > self._expected(unit):
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
                # Not on a leaf (a layer returning a parameter): its hooks
                # would stay for good, one more each forward.
                if t.requires_grad and not t.is_leaf:
                    t.register_hook(grad_hook)
            return None
        return post

    def _backward(self, unit):
        if not self._in_backward():
            self.tl.in_backward = True
            self._push()
            torch.autograd.Variable._execution_engine.queue_callback(self._backward_done)
        if self.recording:
            self.events.append(Event("B", unit, self.unit_keys[unit]))
        elif self.plan is not None:
            self._event("B", unit)

    def _backward_done(self):
        self.tl.in_backward = False
        while self._depth() > 0:  # backward's push, and what a forward that raised left
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
        # Gradients are allocated in backward's phase, on the fast tier: kept
        # there only if they fit beside the parameters within what the budget
        # has left, and then counted in it.
        grads = sum(s.nbytes for s in self.slots if s.is_param and getattr(s.tensor(), "requires_grad", False))
        with self.shared.lock:
            room = self.shared.budget - self.shared.pinned
            self.keep_grads = sum(sizes.values()) + grads <= room
            if self.keep_grads:
                self.grads_reserved = grads
                self.shared.pinned += grads
                stats.pin(grads)
        for pos, ev in enumerate(plan.events):
            self.positions.setdefault((ev.kind, ev.unit), []).append(pos)
        self.plan = plan
        config.info_once(f"plan {id(self)}",
                         f"plan for {self.model_name}: {len(plan.events)} layer events, "
                         f"{len(self.slots)} tensors of {config.mib(sum(sizes.values()))}, budget "
                         f"{config.mib(self.shared.budget)}, planned high-water {config.mib(plan.high_water)}, "
                         f"gradients {'kept' if self.keep_grads else 'offloaded'}")
        # Where the steady cycle starts: its first event's predecessor state.
        # What the budget refuses (other models hold it) goes to DDR too: it
        # may sit on the fast tier where it was allocated.
        for key in range(len(self.slots)):
            if key not in plan.initial or not self._prefetch(key):
                self._offload(key)
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
        self.shared.reap()
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

    def _pin_if_room(self, key, nbytes):
        """Counts nbytes for key in the budget, or refuses (False)."""
        with self.shared.lock:
            if self.shared.pinned + nbytes > self.shared.budget:
                stats.add("refused")
                return False
            self.resident[key] = nbytes
            self.shared.pinned += nbytes
            stats.pin(nbytes)
            return True

    def _unpin(self, key):
        with self.shared.lock:
            nbytes = self.resident.pop(key, None)
            self.pending.pop(key, None)
            if nbytes is not None:
                self.shared.pinned -= nbytes
                stats.pin(-nbytes)

    def _prefetch(self, key):
        """Queues key's move to the fast tier; False if the budget or the library refused it."""
        t = self.slots[key].tensor()
        if t is None:
            return False
        nbytes = self.shared.nbytes_ptr(t)[1]  # now: a dtype change resizes it
        if not self._pin_if_room(key, nbytes):
            return False
        ticket = self.shared.move_async(t, self.shared.fast)
        if ticket is None:
            self._unpin(key)
            return False
        self.pending[key] = ticket
        stats.add("prefetched", nbytes)
        stats.add("prefetches")
        return True

    def _fetch(self, key):
        t = self.slots[key].tensor()
        if t is None:
            return
        nbytes = self.shared.nbytes_ptr(t)[1]
        if not self._pin_if_room(key, nbytes):
            return
        self.shared.drain()  # an offload of this very range may still be queued
        t0 = time.perf_counter_ns()
        if self.shared.move_now(t, self.shared.fast):
            stats.add("fetched", nbytes)
            stats.add("fetches")
        else:
            self._unpin(key)
        stats.add("wait_ns", time.perf_counter_ns() - t0)

    def _offload(self, key):
        t = self.slots[key].tensor()
        nbytes = self.resident.get(key)
        self._unpin(key)
        if t is not None and self.shared.move_async(t, self.shared.slow) is not None and nbytes is not None:
            stats.add("offloaded", nbytes)
            stats.add("offloads")


def storage_of(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # torch >= 2.0 / 1.13


def storage_span(t):
    """(address, bytes) of the whole storage behind tensor t: pages are moved whole."""
    s = storage_of(t)
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
