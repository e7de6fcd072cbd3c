"""The solver's state and its worklist: :class:`Context` (layouts, loop layouts, guards, derivations),
the commit of a rule's proposals (:meth:`Context.commit`), and the breadth-first worklist that re-runs the
users of a buffer whose layout changed (:func:`bfs`).  The levels and free mode (:mod:`.engine`,
:mod:`.free`) drive it.

>>> from layoutkit.infer import Program
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (4,), "float32")
>>> ctx = Context(p, (0, 128))
>>> trial = ctx.overlay()
>>> trial.layouts["a"] = "a layout"
>>> "a" in ctx.layouts, trial.layouts["a"]
(False, 'a layout')
"""

from __future__ import annotations

from collections import ChainMap, Counter, deque
from collections.abc import Mapping, MutableMapping

from ..algebra.layout import Layout
from ..dtypes import element_bits
from ..fragment.fragment import Fragment
from ..scopes import FRAGMENT, LOCAL, REDUCER
from .conversions import MaskedLayouts
from .guards import Predicate
from .library import get_rule
from .reducers import commit_reducer
from .result import Derivation
from .rules import LEVEL_NAMES, STRICT, Conflict, ProgramView, RuleConflict, RuleContext, RuleResult, op_range
from .target import get_merge, get_target
from .validate import OpValidationError

_OVERLAID = ("layouts", "loops", "predicates", "derivations", "setter")


class Context(ProgramView):
    """The solver's state; rules see it through :meth:`view` (a read-only :class:`~.rules.RuleContext`)
    and the engine commits what they return.  ``counts["rule runs"]`` counts the rules run in this solve
    (shared by every overlay)."""

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
        self.counts: Counter = Counter()        # per solve, shared by the overlays
        self.fallback = False
        self.convert: frozenset = frozenset()   # (op uid, fragment) edges read through a converted view
        self.views: dict = {}                   # (op uid, fragment) -> the view's layout
        self.conversions: list = []             # LayoutConversion records kept by free mode
        self.siblings = _alias_siblings(program)
        self.reserved: dict[str, set[str]] = {}  # finalize destination -> its finalize ops (see .reducers)

    def overlay(self) -> Context:
        """A trial context whose writes go to fresh maps layered over this one (O(1) to make)."""
        c = Context.__new__(Context)
        c.__dict__.update(self.__dict__)
        for key in _OVERLAID:
            setattr(c, key, ChainMap({}, getattr(self, key)))
        return c

    def absorb(self, trial: Context) -> None:
        """Keep what ``trial`` (an overlay of this context) wrote."""
        for key in _OVERLAID:
            getattr(self, key).update(getattr(trial, key).maps[0])

    def written(self, key: str) -> MutableMapping:
        """What this overlay wrote itself to its ``key`` map (``"layouts"``, ``"loops"``, ...)."""
        chain = getattr(self, key)
        if not isinstance(chain, ChainMap):
            raise TypeError(f"written({key!r}) asks an overlay; found a {type(chain).__name__}")
        return chain.maps[0]

    def attempt(self, convert: frozenset = frozenset()) -> Context:
        """An overlay for one free-mode attempt reading the ``convert`` edges through views."""
        trial = self.overlay()
        trial.convert = convert
        trial.views = {}
        return trial

    def view(self, op) -> RuleContext:
        """What ``op``'s rule sees, read-only: its converted reads show their views (hidden until set)."""
        hidden = [b for uid, b in self.convert if uid == op.uid]
        layouts: Mapping[str, Layout] = self.layouts
        if hidden:
            layouts = MaskedLayouts(self.layouts, {b: self.views.get((op.uid, b)) for b in hidden})
        return RuleContext(self.program, op_range(op, self.rng), layouts, self.loops, self.fallback, self.memo)

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
        target swizzle merges, otherwise a :class:`Conflict`.  A plain layout proposed for a register
        buffer is refused (:func:`register_layout_error`)."""
        if self.needs_layout(name) and not isinstance(new, Fragment):
            raise register_layout_error(self, name, new, op, rule)
        old = self.layouts.get(name)
        if self.is_reducer(name):
            return commit_reducer(self, name, old, new, op, level, rule)
        if old is None:
            if level != STRICT and op not in self.reserved.get(name, (op,)):
                return False  # a finalize destination takes its first layout from its finalize
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
        """Record ``layout`` for ``name`` unconditionally, with its derivation step."""
        self.layouts[name] = layout
        self.setter[name] = op
        self.derivations[name] = self.derivations.get(name, []) + [Derivation(rule, LEVEL_NAMES[level], op, action)]


def register_layout_error(ctx: ProgramView, name: str, new: Layout, op: str, rule: str) -> OpValidationError:
    """The error for a rule that proposes a plain (memory) layout for register buffer ``name``: the rule of
    ``op`` on the program's target lays that buffer out as memory, so the program does not fit the target
    (a program built for one target and re-targeted, or an op no builder checked): every later rule reads a
    register buffer's layout as a :class:`~layoutkit.fragment.Fragment`.

    >>> import layoutkit as lk
    >>> from layoutkit.infer import Program
    >>> p = Program(target="ascend")
    >>> _ = p.alloc_fragment("C", (16, 16), "float32")
    >>> print(register_layout_error(Context(p, (0, 128)), "C", lk.Layout([16, 16], lambda i, j: (i, j)), "gemm#3",
    ...                             "gemm"))  # doctest: +ELLIPSIS
    gemm#3: the gemm rule of target 'ascend' gave register buffer C (local.fragment, shape (16, 16)) a plain Layout...
    """
    buf, target = ctx.buffer(name), ctx.program.target
    memory = [s for s in get_target(target).scopes_of(target) if s not in (FRAGMENT, REDUCER, LOCAL)]
    found = new.describe() if isinstance(new, Layout) else f"{type(new).__name__} {new!r:.80}"
    return OpValidationError(
        f"{op}: the {rule} rule of target {target!r} gave register buffer {name} ({buf.scope}, shape "
        f"{ctx.shape(name)}) a plain {found}; expected a Fragment (threads x registers), as every "
        f"{buf.scope} buffer needs: on {target} that rule lays {name} out in memory, so allocate it in "
        f"the memory scope the op needs there (one of {', '.join(memory)}) or build the program for the target "
        "it was written for", op, name)


def _alias_siblings(program) -> dict[str, tuple[str, ...]]:
    """Buffer -> the other views of its storage."""
    groups: dict[str, list[str]] = {}
    for name, buf in program.buffers.items():
        groups.setdefault(buf.alias_of or name, []).append(name)
    return {n: tuple(m for m in g if m != n) for g in groups.values() if len(g) > 1 for n in g}


def apply_rule(ctx: Context, op, level: int) -> RuleResult:
    """``op``'s rule run on what it sees of ``ctx`` (counted in ``ctx.counts``); a rule's conflict
    becomes a :class:`Conflict`."""
    rule = get_rule(op.kind, ctx.target)
    ctx.counts["rule runs"] += 1
    try:
        res = rule(op, ctx.view(op), level)
    except RuleConflict as err:
        raise Conflict(str(err), err.buffer or "?", (op.name,), ()) from None
    return res if isinstance(res, RuleResult) else RuleResult(res)


def run(ctx: Context, op, level: int, ops_set, users, queue: deque, queued: set) -> None:
    """Run ``op``'s rule and commit what it proposes; the users (in ``ops_set``) of every buffer that
    changed join the worklist, to the front when they touch a buffer with a known layout (TileLang's
    ``EnqueueWithPriority``)."""
    res = apply_rule(ctx, op, level)
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
        for changed in [name, *propagate_alias(ctx, name, op, level)]:
            for user in users.get(changed, ()):
                if user is op or user.uid in queued or user.uid not in ops_set:
                    continue
                queued.add(user.uid)
                if any(b in ctx.layouts for b in user.buffers):
                    queue.appendleft(user)
                else:
                    queue.append(user)


def bfs(ctx: Context, start, level: int, ops_set, users) -> None:
    """Run the ``start`` ops, then the worklist they fill, until it is empty."""
    queue = deque(start)
    queued = {op.uid for op in start}
    while queue:
        op = queue.popleft()
        queued.discard(op.uid)
        run(ctx, op, level, ops_set, users, queue, queued)


def alias_layout(ctx: ProgramView, src: str, dst: str, lay: Layout) -> Layout:
    """``src``'s layout seen through the view ``dst`` of the same storage: reshaped to ``dst``'s shape,
    rescaled by the element-width ratio (TileLang's ``Reshape(shape, old bits, new bits)``)."""
    a, b = ctx.buffer(src), ctx.buffer(dst)
    shape = ctx.shape(dst)
    if shape == lay.input_shape and a.dtype == b.dtype:
        return lay
    if isinstance(lay, Fragment):
        return lay.reshape(shape)
    return lay.reshape(shape, element_bits(a.dtype), element_bits(b.dtype))


def propagate_alias(ctx: Context, name: str, op, level: int) -> list[str]:
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
