"""The strict -> common -> free solver (REFERENCE section 5).

0. Fragments no op touches become fully replicated; annotations enter the strict map.
1. kStrict: every op once.
2. kCommon: a BFS worklist; an op that changes a buffer's layout re-queues the buffer's other users
   (to the front when they touch a buffer with a known layout, as TileLang's ``EnqueueWithPriority``).
3. kFree: per connected component (union-find over the non-global buffers the ops share), try every op
   as the root (run it free and finish the queue, then every other op in order the same way), score
   with the cost model and keep the cheapest (ties: the smallest layout signature, so the answer does
   not depend on op order; TileLang keeps the earliest root).
4. Aliases of one storage get the layout, rescaled by the element-width ratio.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (4,), "float32")
>>> sorted(infer_layouts(p).layout_map)
['a']
"""

from __future__ import annotations

from collections import ChainMap, deque
from collections.abc import Sequence

from ..algebra.layout import Layout
from ..cost import Operand, Statement
from ..cost import clear_caches as clear_cost_caches
from ..dtypes import element_bits
from ..errors import LayoutConflictError, LayoutError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment
from . import loops as _loops  # noqa: F401  (registers the generic rules)
from . import nv_rules as _nv_rules  # noqa: F401  (registers the sm_* rules)
from .cost import get_cost_model
from .loops import RuleConflict
from .result import Derivation, InferenceResult, _NameKeyed
from .rules import COMMON, FREE, LEVEL_NAMES, STRICT, get_merge, get_rule


class Conflict(LayoutError):
    """Two proposals for one buffer cannot be reconciled (internal; see :mod:`.conflicts`)."""

    def __init__(self, message: str, buffer: str, ops: Sequence[str], layouts: Sequence[Layout]):
        super().__init__(message)
        self.buffer = buffer
        self.ops = tuple(ops)
        self.layouts = tuple(layouts)


class Context:
    """Mutable solver state handed to the rules."""

    def __init__(self, program, rng: tuple[int, int]):
        self.program = program
        self.target = program.target
        self.rng = rng
        self.layouts: dict[str, Layout] = {}
        self.strict: set[str] = set()
        self.loops: dict[str, Fragment] = {}
        self.predicates: dict[str, str] = {}
        self.derivations: dict[str, list[Derivation]] = {}
        self.setter: dict[str, str] = {}
        self.memo: dict = {}

    def overlay(self) -> Context:
        """A trial context whose writes go to fresh maps layered over this one (O(1) to make)."""
        c = Context.__new__(Context)
        c.__dict__.update(self.__dict__)
        for key in ("layouts", "loops", "predicates", "derivations", "setter"):
            setattr(c, key, ChainMap({}, getattr(self, key)))
        return c

    def absorb(self, trial: Context) -> None:
        """Keep what ``trial`` (an overlay of this context) wrote."""
        for key in ("layouts", "loops", "predicates", "derivations", "setter"):
            getattr(self, key).update(getattr(trial, key).maps[0])

    def buffer(self, name: str):
        return self.program.buffers[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.program.shape_of(name)

    def is_fragment(self, name: str) -> bool:
        return self.program.buffers[name].scope == "local.fragment"

    # ---- committing proposals -------------------------------------------------------------------
    def commit(self, name: str, new: Layout, op: str, level: int, rule: str) -> bool:
        """Record ``new`` for ``name``; True when the map changed.  Fragment containment upgrades,
        target swizzle merges, otherwise a :class:`Conflict`."""
        old = self.layouts.get(name)
        if old is None:
            self._set(name, new, op, level, rule, "set")
            return True
        if old is new or old == new:
            return False
        if isinstance(old, Fragment) and isinstance(new, Fragment):
            if old.input_shape == new.input_shape and old.is_equal(new):
                return False
            if name not in self.strict and level != STRICT and new.contains(old):
                self._set(name, new, op, level, rule, "widened")
                return True
        elif not isinstance(old, Fragment) and not isinstance(new, Fragment):
            if old.input_shape == new.input_shape and old.is_equal(new):
                return False
            merge = get_merge(self.target)
            merged = merge(old, new, self.buffer(name).dtype) if merge and name not in self.strict else None
            if merged is not None:
                if merged == old:
                    return False
                self._set(name, merged, op, level, rule, "merged")
                return True
        first = self.setter.get(name, "?")
        raise Conflict(f"Get different layout for {name}: {first} gives {old.describe()}, {op} gives "
                       f"{new.describe()}", name, (first, op), (old, new))

    def _set(self, name, layout, op, level, rule, action) -> None:
        self.layouts[name] = layout
        self.setter[name] = op
        self.derivations[name] = self.derivations.get(name, []) + [Derivation(rule, LEVEL_NAMES[level], op, action)]


def thread_range(program) -> tuple[int, int]:
    """``(0, threads)``, or ``(threads, threads)`` for sm_90+ warp-specialised consumers (a pipelined
    global -> shared copy feeding a GEMM), as TileLang binds them."""
    t = program.threads
    arch = program.target
    if arch.startswith("sm_") and arch[3:5].isdigit() and int(arch[3:5]) >= 90:
        staged = any(op.kind == "copy" and op.args["dst"] in program.stages
                     and program.buffers[op.args["src"]].scope == "global" for op in program.ops)
        if staged and any(op.kind == "gemm" for op in program.ops):
            return (t, t)
    return (0, t)


def _users(ops) -> dict[str, list]:
    users: dict[str, list] = {}
    for op in ops:
        for b in op.buffers:
            users.setdefault(b, []).append(op)
    return users


def _run(ctx: Context, op, level: int, ops_set, users, queue: deque, queued: set) -> None:
    rule = get_rule(op.kind, ctx.target)
    try:
        res = rule(op, ctx, level)
    except RuleConflict as err:
        raise Conflict(str(err), err.buffer or "?", (op.name,), ()) from None
    for name, lay in res.items():
        if ctx.commit(name, lay, op.name, level, op.kind):
            for user in users.get(name, ()):
                if user is op or user.uid in queued or user.uid not in ops_set:
                    continue
                queued.add(user.uid)
                if any(b in ctx.layouts for b in user.buffers):
                    queue.appendleft(user)
                else:
                    queue.append(user)


def _bfs(ctx: Context, start, level: int, ops_set, users) -> None:
    queue = deque(start)
    queued = {op.uid for op in start}
    while queue:
        op = queue.popleft()
        queued.discard(op.uid)
        _run(ctx, op, level, ops_set, users, queue, queued)


def _components(ops, program) -> list[list]:
    parent = list(range(len(ops)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, int] = {}
    for k, op in enumerate(ops):
        for b in op.buffers:
            if program.buffers[b].scope == "global":
                continue
            if b in owner:
                parent[find(k)] = find(owner[b])
            else:
                owner[b] = k
    groups: dict[int, list] = {}
    for k, op in enumerate(ops):
        groups.setdefault(find(k), []).append(op)
    return list(groups.values())


def _unsolved(ctx: Context, comp) -> bool:
    for op in comp:
        if op.loop is not None and op.name not in ctx.loops and any(ctx.is_fragment(b) for b in op.buffers):
            return True
        if any(ctx.is_fragment(b) and b not in ctx.layouts for b in op.buffers):
            return True
    return False


def _signature(ctx: Context, comp) -> tuple:
    names = sorted({b for op in comp for b in op.buffers if b in ctx.layouts})
    return tuple((n, str(ctx.layouts[n])) for n in names) + tuple(
        sorted(str(ctx.loops[op.name]) for op in comp if op.name in ctx.loops))


def statements(ctx: Context, comp) -> list[Statement]:
    """The ops of ``comp`` as :class:`layoutkit.cost.Statement` (loop layout, buffers, index maps)
    for cost models that set ``wants_statements``."""
    out = []
    for op in comp:
        operands = []
        if op.loop is not None:
            for a in op.accesses:
                buf = ctx.buffer(a.buffer)
                operands.append(Operand(a.buffer, buf.scope, buf.dtype, ctx.shape(a.buffer), a.is_write, a.indices,
                                        ctx.layouts.get(a.buffer)))
        else:
            for b in op.buffers:
                buf = ctx.buffer(b)
                operands.append(Operand(b, buf.scope, buf.dtype, ctx.shape(b), b in (op.args.get("C"),
                                        op.args.get("dst")), None, ctx.layouts.get(b)))
        out.append(Statement(op.name, op.kind, op.loop, ctx.loops.get(op.name), tuple(operands)))
    return out


def solve(program, ops=None, annotations=None, cost_model="register-count") -> Context:
    """Run the three levels on ``ops`` (default: all) with ``annotations`` (default: the program's)."""
    model = get_cost_model(cost_model)
    ops = list(program.ops if ops is None else ops)
    annotations = program.annotations if annotations is None else annotations
    ctx = Context(program, thread_range(program))
    touched = {b for op in ops for b in op.buffers}
    for name, buf in program.buffers.items():
        if buf.scope == "local.fragment" and name not in touched and buf.alias_of is None:
            ctx._set(name, make_fully_replicated_fragment(buf.shape, ctx.rng[1]).bind_thread_range(*ctx.rng),
                     "floating", STRICT, "floating", "set")
    for name, lay in annotations.items():
        ctx._set(name, lay, "annotate_layout", STRICT, "annotation", "set")
        ctx.strict.add(name)
    users = _users(ops)
    everything = {op.uid for op in ops}
    queue: deque = deque()
    queued: set = set()
    for op in ops:
        _run(ctx, op, STRICT, everything, users, queue, queued)
    _bfs(ctx, ops, COMMON, everything, users)
    for comp in _components(ops, program):
        if not _unsolved(ctx, comp):
            continue
        comp_set = {op.uid for op in comp}
        best = None
        first_error: Conflict | None = None
        for root in comp:
            trial = ctx.overlay()
            try:
                for op in [root] + [op for op in comp if op is not root]:
                    _bfs(trial, [op], FREE, comp_set, users)
            except Conflict as err:
                first_error = first_error or err
                continue
            frags = {b: trial.layouts[b] for op in comp for b in op.buffers if b in trial.layouts}
            if getattr(model, "wants_statements", False):
                score = model.cost(frags, program, statements=statements(trial, comp))
            else:
                score = model.cost(frags, program)
            key = (score, _signature(trial, comp))
            if best is None or key < best[0]:
                best = (key, trial)
        if best is None:
            raise first_error or Conflict("no available layout found", "?", [o.name for o in comp], ())
        trial = best[1]
        for b, steps in list(trial.derivations.maps[0].items()):
            d = steps[-1]
            if d.level == "free":
                trial.derivations[b] = steps[:-1] + [Derivation(d.rule, d.level, d.op, d.action, best[0][0])]
        ctx.absorb(trial)
    _aliases(ctx)
    return ctx


def _aliases(ctx: Context) -> None:
    for name, buf in ctx.program.buffers.items():
        root = buf.alias_of
        if root is None:
            continue
        src, dst = (root, name) if root in ctx.layouts else (name, root)
        if src not in ctx.layouts or dst in ctx.layouts:
            continue
        lay = ctx.layouts[src]
        a, b = ctx.buffer(src), ctx.buffer(dst)
        shape = ctx.shape(dst)
        if shape != lay.input_shape or a.dtype != b.dtype:
            if isinstance(lay, Fragment):
                lay = lay.reshape(shape)
            else:
                lay = lay.reshape(shape, element_bits(a.dtype), element_bits(b.dtype))
        ctx._set(dst, lay, f"alias of {src}", STRICT, "alias", "copied")


def clear_caches() -> None:
    """Forget the memoised rule results (layouts are immutable, so the caches only save time)."""
    from . import loops, nv_rules

    for fn in (loops.loop_from_buffer, loops.complete_buffer, loops.plan_partition, loops.reducer_layout,
               nv_rules._layouts):
        fn.cache_clear()
    clear_cost_caches()


def infer_layouts(program, cost_model="register-count", *, explain_conflicts: bool = True) -> InferenceResult:
    """Infer a layout for every buffer and loop of ``program`` (see the module doc).  A conflict raises
    :class:`~layoutkit.errors.LayoutConflictError` with a minimal set of constraints."""
    try:
        ctx = solve(program, cost_model=cost_model)
    except Conflict as err:
        if not explain_conflicts:
            raise LayoutConflictError(str(err)) from None
        from .conflicts import explain

        raise explain(program, err, cost_model) from None
    return InferenceResult(_NameKeyed(ctx.layouts), _NameKeyed(ctx.loops), _NameKeyed(ctx.predicates),
                           dict(ctx.derivations))
