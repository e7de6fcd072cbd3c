"""The strict -> common -> free solver (REFERENCE section 5).

0. Fragments no op touches become fully replicated; annotations enter the strict map.
1. kStrict: every op once.
2. kCommon: a BFS worklist; an op that changes a buffer's layout re-queues the buffer's other users
   (to the front when they touch a buffer with a known layout, as TileLang's ``EnqueueWithPriority``).
3. kFree: per connected component (union-find over the fragment buffers the ops share), try every op
   as the root (run it free and finish the queue, then every other op in order the same way), score
   with the cost model and keep the cheapest (ties: the earliest root in :func:`canonical_order`,
   TileLang's earliest root made independent of how independent ops are ordered).  When no attempt
   lays every fragment out because only fills (or transposes) touch it (TileLang fails there), the
   attempts are repeated with fills planning layouts like loops.  Beyond TileLang, an
   attempt may read a fragment through a converted view (:mod:`.conversions`): models that price
   conversions weigh them against re-rooting; the others convert only when every plain attempt
   conflicts.
4. Aliases of one storage get the layout, rescaled by the element-width ratio.
5. Every register fragment is checked before it leaves the solver (:mod:`.soundness`): the whole buffer,
   threads of the block, one element per (thread, register) slot; a violation is an internal error.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (4,), "float32")
>>> sorted(infer_layouts(p).layout_map)
['a']
"""

from __future__ import annotations

import json
from collections import ChainMap, deque
from collections.abc import Sequence

from ..algebra.layout import Layout
from ..caches import clear_all
from ..cost import Operand, Statement, add_costs, conversion_price
from ..dtypes import element_bits
from ..errors import LayoutConflictError, LayoutError, ShapeError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment
from ..scopes import FRAGMENT
from . import loops as _loops  # noqa: F401  (registers the generic rules)
from .conversions import LayoutConversion, MaskedLayouts, conversion_edges
from .cost import get_cost_model
from .guards import Predicate
from .guards import texts as guard_texts
from .loops import RuleConflict
from .result import Derivation, InferenceResult, NameKeyed
from .rules import COMMON, FREE, LEVEL_NAMES, STRICT, ProgramView, RuleContext, RuleResult, get_merge, get_rule
from .serialize import op_dict
from .soundness import check_solved
from .target import get_target


class Conflict(LayoutError):
    """Two proposals for one buffer cannot be reconciled (internal; see :mod:`.conflicts`)."""

    def __init__(self, message: str, buffer: str, ops: Sequence[str], layouts: Sequence[Layout]):
        super().__init__(message)
        self.buffer = buffer
        self.ops = tuple(ops)
        self.layouts = tuple(layouts)


class Context(ProgramView):
    """The solver's state; rules see it through :meth:`view` (a read-only :class:`~.rules.RuleContext`)
    and the engine commits what they return."""

    def __init__(self, program, rng: tuple[int, int]):
        self.program = program
        self.target = program.target
        self.rng = rng
        self.layouts: dict[str, Layout] = {}
        self.strict: set[str] = set()
        self.loops: dict[str, Fragment] = {}
        self.predicates: dict[str, Predicate] = {}
        self.derivations: dict[str, list[Derivation]] = {}
        self.setter: dict[str, str] = {}
        self.memo: dict = {}                    # RuleContext.once, per solve
        self.fallback = False
        self.convert: frozenset = frozenset()   # (op uid, fragment) edges read through a converted view
        self.views: dict = {}                   # (op uid, fragment) -> the view's layout
        self.conversions: list = []             # LayoutConversion records kept by free mode
        self.siblings = _alias_siblings(program)

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

    def attempt(self, convert: frozenset = frozenset()) -> Context:
        """An overlay for one free-mode attempt reading the ``convert`` edges through views."""
        trial = self.overlay()
        trial.convert = convert
        trial.views = {}
        return trial

    def view(self, op) -> RuleContext:
        """What ``op``'s rule sees, read-only: its converted reads show their views (hidden until set)."""
        hidden = [b for uid, b in self.convert if uid == op.uid]
        layouts = self.layouts
        if hidden:
            layouts = MaskedLayouts(self.layouts, {b: self.views.get((op.uid, b)) for b in hidden})
        return RuleContext(self.program, self.rng, layouts, self.loops, self.fallback, self.memo)

    def set_view(self, op, name: str, new: Layout) -> None:
        """Record the layout ``op`` reads the converted ``name`` through."""
        key = (op.uid, name)
        old = self.views.get(key)
        if old is None or (isinstance(old, Fragment) and isinstance(new, Fragment) and new.contains(old)):
            self.views[key] = new
        elif not old.is_equal(new):
            raise Conflict(f"{op.name}: two views of converted {name}: {old.describe()} and {new.describe()}",
                           name, (op.name,), (old, new))

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


def _alias_siblings(program) -> dict[str, tuple[str, ...]]:
    """Buffer -> the other views of its storage."""
    groups: dict[str, list[str]] = {}
    for name, buf in program.buffers.items():
        groups.setdefault(buf.alias_of or name, []).append(name)
    return {n: tuple(m for m in g if m != n) for g in groups.values() if len(g) > 1 for n in g}


def thread_range(program) -> tuple[int, int]:
    """``(min, extent)`` of the threads running the tile ops, as the program's target says
    (:meth:`~layoutkit.infer.target.Target.thread_range`; NVIDIA sm_90 warp specialisation puts the
    consumers after a producer warp group).

    >>> from layoutkit.infer import programs
    >>> thread_range(programs.gemm(threads=256, target="sm_90")), thread_range(programs.gemm(threads=256))
    ((128, 256), (0, 256))
    """
    return get_target(program.target).thread_range(program)


def _users(ops) -> dict[str, list]:
    users: dict[str, list] = {}
    for op in ops:
        for b in op.buffers:
            users.setdefault(b, []).append(op)
    return users


def _run(ctx: Context, op, level: int, ops_set, users, queue: deque, queued: set) -> None:
    rule = get_rule(op.kind, ctx.target)
    try:
        res = rule(op, ctx.view(op), level)
    except RuleConflict as err:
        raise Conflict(str(err), err.buffer or "?", (op.name,), ()) from None
    if not isinstance(res, RuleResult):
        res = RuleResult(res)
    ctx.loops.update(res.loops)
    if res.loop is not None:
        ctx.loops[op.name] = res.loop
    if res.predicate is not None:
        ctx.predicates[op.name] = res.predicate
    for name, lay in res.layouts.items():
        if (op.uid, name) in ctx.convert:
            ctx.set_view(op, name, lay)
            continue
        if not ctx.commit(name, lay, op.name, level, op.kind):
            continue
        for changed in [name, *_propagate_alias(ctx, name, op, level)]:
            for user in users.get(changed, ()):
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
    """Connected components of ops linked by the fragment buffers they share (views of one storage
    count as one buffer), as TileLang's free mode groups them; shared and global buffers link none."""
    parent = list(range(len(ops)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, int] = {}
    for k, op in enumerate(ops):
        for b in op.buffers:
            buf = program.buffers[b]
            if buf.scope != FRAGMENT:
                continue
            key = buf.alias_of or b
            if key in owner:
                parent[find(k)] = find(owner[key])
            else:
                owner[key] = k
    groups: dict[int, list] = {}
    for k, op in enumerate(ops):
        groups.setdefault(find(k), []).append(op)
    return list(groups.values())


def canonical_order(ops) -> dict[int, tuple]:
    """A sort key per op uid: its depth in the order ops sharing a buffer must keep (1 + the deepest
    earlier op touching one of its buffers), then its content.  Free mode tries roots in this order
    and keeps the first of equally cheap attempts, as TileLang keeps the earliest root; unlike
    program order, the key does not change when independent ops are permuted."""
    depth = _depths(ops)
    return {op.uid: (depth[op.uid], _content(op)) for op in ops}


def _depths(ops) -> dict[int, int]:
    """The first part of :func:`canonical_order`'s key: op uid -> depth."""
    depth: dict[str, int] = {}
    out = {}
    for op in ops:
        d = 1 + max((depth[b] for b in op.buffers if b in depth), default=-1)
        for b in op.buffers:
            depth[b] = d
        out[op.uid] = d
    return out


def _content(op) -> str:
    d = op_dict(op)
    d.pop("uid")
    return json.dumps(d, sort_keys=True, default=str)


def _fragments_unsolved(ctx: Context, comp) -> bool:
    return any(ctx.is_fragment(b) and b not in ctx.layouts for op in comp for b in op.buffers)


def _unsolved(ctx: Context, comp) -> bool:
    """Free mode still has work: a fragment without a layout, or a loop without a loop layout."""
    for op in comp:
        if op.loop is not None and op.name not in ctx.loops:
            return True
        if any(ctx.is_fragment(b) and b not in ctx.layouts for b in op.buffers):
            return True
    return False


def statements(ctx: Context, comp) -> list[Statement]:
    """The ops of ``comp`` as :class:`layoutkit.cost.Statement` (loop layout, buffers, index maps)
    for cost models that set ``wants_statements``."""
    out = []
    for op in comp:
        operands = []
        if op.loop is not None:
            for a in op.accesses:
                buf = ctx.buffer(a.buffer)
                # a converted read sees its view's layout
                lay = ctx.views.get((op.uid, a.buffer)) or ctx.layouts.get(a.buffer)
                operands.append(Operand(a.buffer, buf.scope, buf.dtype, ctx.shape(a.buffer), a.is_write, a.indices,
                                        lay))
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
        if buf.scope == FRAGMENT and name not in touched and buf.alias_of is None:
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
    depth = _depths(ops)
    for comp in _components(ops, program):
        if not _unsolved(ctx, comp):
            continue
        if len(comp) > 1:  # the order of canonical_order; an op's content is only needed to sort
            comp = sorted(comp, key=lambda op: (depth[op.uid], _content(op)))
        _free_component(ctx, comp, model, users)
    _aliases(ctx)
    check_solved(program, ctx.layouts, ctx.rng[1])
    return ctx


def _free_component(ctx: Context, comp, model, users) -> None:
    """Try every root (and, for models that price conversions, every root with one fragment ->
    fragment edge converted); keep the cheapest, the earliest of equals (plain attempts first).
    Models that price no conversion convert only when no plain attempt succeeds."""
    comp_set = {op.uid for op in comp}
    edges = conversion_edges(comp, ctx.is_fragment)
    plain = [frozenset()]
    converted = [frozenset([e]) for e in edges]
    if model.prices_conversions():
        passes = [(False, plain + converted), (True, plain + converted)]
    else:
        passes = [(False, plain), (True, plain), (False, converted), (True, converted)]
    best, first_error = None, None
    for planning_fills, group in passes:
        for convert in group:
            for root in comp:
                try:
                    trial = _attempt(ctx, comp, root, comp_set, users, convert, planning_fills)
                except Conflict as err:
                    first_error = first_error or err
                    continue
                scored = None if _fragments_unsolved(trial, comp) else _score(trial, comp, model, convert)
                if scored is not None and (best is None or scored[0] < best[0]):
                    best = (*scored, trial)
        if best is not None:
            break
    if best is None:
        raise first_error or Conflict("no available layout found", "?", [o.name for o in comp], ())
    score, conversions, trial = best
    for b, steps in list(trial.derivations.maps[0].items()):
        d = steps[-1]
        if d.level == "free":
            trial.derivations[b] = steps[:-1] + [Derivation(d.rule, d.level, d.op, d.action, score)]
    for conv in conversions:
        trial.derivations[conv.buffer] = trial.derivations.get(conv.buffer, []) + [
            Derivation("conversion", "free", conv.op, "converted", conv.cost)]
    ctx.absorb(trial)
    ctx.conversions.extend(conversions)


def _attempt(ctx: Context, comp, root, comp_set, users, convert: frozenset, planning_fills: bool) -> Context:
    """One attempt: ``root`` first, then every other op in order, each followed by the worklist.
    ``planning_fills``: fills and transposes plan layouts like loops (beyond TileLang, where they
    propose nothing); only tried when no TileLang-like attempt lays every fragment out."""
    trial = ctx.attempt(convert)
    trial.fallback = planning_fills
    for op in [root] + [op for op in comp if op is not root]:
        _bfs(trial, [op], FREE, comp_set, users)
    trial.fallback = False
    return trial


def _score(trial: Context, comp, model, convert: frozenset):
    """``(score, conversions)`` of a finished attempt, or None when a converted edge is void (the view
    was never set, the buffer has no layout of its own, or the view equals it)."""
    frags = {b: trial.layouts[b] for op in comp for b in op.buffers if b in trial.layouts}
    if model.wants_statements:
        score = model.cost(frags, trial.program, statements=statements(trial, comp))
    else:
        score = model.cost(frags, trial.program)
    names = {op.uid: op.name for op in comp}
    conversions = []
    for uid, b in sorted(convert):
        src, dst = trial.layouts.get(b), trial.views.get((uid, b))
        if not isinstance(src, Fragment) or not isinstance(dst, Fragment) or src.is_equal(dst):
            return None
        price, detail = conversion_price(model, src, dst, trial.buffer(b).dtype)
        score = add_costs(score, price)
        conversions.append(LayoutConversion(b, names[uid], src, dst, price, detail))
    return score, conversions


def _aliases(ctx: Context) -> None:
    """Views of one storage that no op reached: copy the layout of a laid-out view (rescaled)."""
    for name, buf in ctx.program.buffers.items():
        root = buf.alias_of
        if root is None:
            continue
        src, dst = (root, name) if root in ctx.layouts else (name, root)
        if src not in ctx.layouts or dst in ctx.layouts:
            continue
        ctx._set(dst, alias_layout(ctx, src, dst, ctx.layouts[src]), f"alias of {src}", STRICT, "alias", "copied")


def alias_layout(ctx: Context, src: str, dst: str, lay: Layout) -> Layout:
    """``src``'s layout seen through the view ``dst`` of the same storage: reshaped to ``dst``'s shape,
    rescaled by the element-width ratio (TileLang's ``Reshape(shape, old bits, new bits)``)."""
    a, b = ctx.buffer(src), ctx.buffer(dst)
    shape = ctx.shape(dst)
    if shape == lay.input_shape and a.dtype == b.dtype:
        return lay
    if isinstance(lay, Fragment):
        return lay.reshape(shape)
    return lay.reshape(shape, element_bits(a.dtype), element_bits(b.dtype))


def _propagate_alias(ctx: Context, name: str, op, level: int) -> list[str]:
    """As TileLang does on every commit: the views sharing ``name``'s storage get its layout now (so
    their users see it); returns the views that changed."""
    changed = []
    for sib in ctx.siblings.get(name, ()):
        target = alias_layout(ctx, name, sib, ctx.layouts[name])
        old = ctx.layouts.get(sib)
        if old is None:
            ctx._set(sib, target, op.name, level, "alias", "copied")
            changed.append(sib)
        elif not (old.input_shape == target.input_shape and old.is_equal(target)):
            raise Conflict(f"Get different layout for alias buffer {sib} (storage of {name}): {old.describe()} vs "
                           f"{target.describe()}", sib, (ctx.setter.get(sib, "?"), op.name), (old, target))
    return changed


def clear_caches() -> None:
    """Forget the memoised rule and cost results (layouts are immutable, so the caches only save time):
    every cache registered with :func:`layoutkit.caches.memoized`."""
    clear_all()


def infer_layouts(program, cost_model="register-count", *, explain_conflicts: bool = True) -> InferenceResult:
    """Infer a layout for every buffer and loop of ``program`` (see the module doc).  A conflict raises
    :class:`~layoutkit.errors.LayoutConflictError` with a minimal set of constraints."""
    from .program import Program

    if not isinstance(program, Program):
        raise ShapeError(f"infer_layouts: expected a layoutkit.infer.Program; found {type(program).__name__} "
                         f"{program!r:.80}")
    try:
        ctx = solve(program, cost_model=cost_model)
    except Conflict as err:
        if not explain_conflicts:
            raise LayoutConflictError(str(err)) from None
        from .conflicts import explain

        raise explain(program, err, cost_model) from None
    return InferenceResult(NameKeyed(ctx.layouts), NameKeyed(ctx.loops), NameKeyed(guard_texts(ctx.predicates)),
                           dict(ctx.derivations), tuple(ctx.conversions), NameKeyed(ctx.predicates))
