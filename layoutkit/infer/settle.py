"""Which roots' free-mode attempts provably end where one finished attempt did.

Free mode (:mod:`.free`) runs a component once per root.  Let ``S`` be the state one attempt ends in
and ``W`` what it wrote: layouts of buffers and loop layouts of ops that had none before the attempt
(it must not have changed a layout set before it).  For an op ``o`` let ``N(o)`` be its entries in
``W`` (its buffers' layouts, its loop layout, and in an attempt with a converted read the view the op
reads it through, which like its loop no other op sets or sees).  When every op of the component has a *local* rule
(:func:`~.rules.register_rule`: its result depends only on the entries of its own buffers and loop),
:func:`covered_roots` runs each op's rule on every *view* of ``S`` restricted to ``N(o)`` that an
attempt can show it (any subset of its buffers with its loop and views hidden, and the whole of
``N(o)``).  A
view is *good* when (a) the rule raises nothing and proposes entries only for its own buffers and
loop, each equal to ``S``'s, and (b) a run that adds something (its *effect*) completes ``N(o)``; a
run that adds nothing is *silent*.  Every view but the empty one must be good, and so must the
empty one of an op without buffers in ``W``.  Then by (a) and induction over the rule runs, an
attempt whose runs all see good views stays inside ``S`` (each run proposes ``S``'s entries, and a
commit of an equal entry changes nothing) and nothing conflicts; a loop entry is set only by its op's
run, which by (b) completes ``N(o)``, so only the enumerated views arise.  Two ways to show that such
an attempt also ends with all of ``S``:

*Every root* when, besides, every empty view is good and (c) with every buffer shown and the loop
and views hidden, the run is not silent; (d) non-silent on a view means non-silent on any larger non-full one;
(e) no nonempty set ``M`` of ``W``'s buffers is *stuck* (every op touching ``M`` silent on the view
hiding exactly ``M``; the greatest such set is found by deletion, valid by (d)).  Let ``G`` be the end
state: every op runs at least once and a change to a buffer re-queues its other users, so each op's
last run saw ``G``'s view; an op that ran with effect completed ``N(o)``, so one still missing entries
was silent there.  Missing loops alone contradict (c); missing buffers form a stuck set.

*The eager roots* (an op with buffers in ``W`` whose empty view is good and not silent) when every
other view that hides something is non-silent and the ops sharing ``W``'s buffers are connected: the
root completes ``N(root)``, each user of a buffer set is queued, sees a nonempty view and completes
its own, so the root's worklist reaches and completes every op before any other op runs on an empty
view; an op without buffers in ``W`` only ever sees its good empty view, and so must one reading
through a converted view (a change to the buffer behind the view queues it).  Here a root whose own empty
view proposes something else (another plan) is not covered; it is run, and may cover others.

Equal layouts give an equal score, and free mode keeps the earliest of equal scores, so skipping the
covered roots of later attempts changes nothing.

>>> from layoutkit.infer import Program
>>> from layoutkit.infer.engine import solve
>>> p = Program(threads=128)
>>> f = [p.alloc_fragment(f"f{k}", (64, 64), "float16" if k < 20 else "float32") for k in range(41)]
>>> for a, b in zip(f, f[1:]):
...     _ = p.parallel((64, 64), writes=[(b, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
>>> solve(p).counts["rule runs"] < 20 * len(p.ops)   # two roots run, two checks; every root: ~80 an op
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .conversions import MaskedLayouts
from .library import get_rule, rule_is_local
from .rules import FREE, RuleContext, RuleResult, op_range
from .state import Context

MAX_ENTRIES = 6
"""An op with more written buffers than this is not checked (``2**n`` views)."""

_LOOP = object()  # the op's own loop layout among its entries
_VIEW = object()  # (_VIEW, buffer): the view a converted read of the op sees
_NONE: frozenset = frozenset()


@dataclass
class _Views:
    """One op's views: shown buffers -> effect (None: the empty view is not good).  ``private``: its
    entries no other op sets or reads (its loop, the views of its converted reads), hidden in every
    view but the whole one."""

    entries: tuple[str, ...]
    private: frozenset
    effects: dict[frozenset, set | None]
    converts: bool = False  # reads a fragment through a view: queued by changes it does not see

    def silent(self, shown: frozenset) -> bool:
        return not self.effects[shown]

    def non_full(self):
        """The views that hide something."""
        every = frozenset(self.entries)
        return [v for v in self.effects if self.private or v != every]


def check_runs(comp) -> int:
    """About how many rule runs :func:`covered_roots` takes for ``comp`` (to weigh against attempts)."""
    return sum((1 << min(len(set(op.buffers)), MAX_ENTRIES)) + 1 for op in comp)


def covered_roots(base: Context, trial: Context, comp, fallback: bool) -> frozenset[int]:
    """The uids of the roots whose attempts over ``comp`` from ``base`` with ``trial``'s converted edges
    (fills planning layouts when ``fallback``) provably end with ``trial``'s layouts, loop layouts and
    views (see the module doc)."""
    layouts, loops = trial.written("layouts"), trial.written("loops")
    if not _checkable(base, comp, layouts, loops):
        return _NONE
    views: dict[int, _Views] = {}
    for op in comp:
        v = _op_views(trial, op, layouts, loops, fallback)
        if v is None:
            return _NONE
        views[op.uid] = v
    if _every_root(comp, views, layouts):
        return frozenset(op.uid for op in comp)
    if _eager(comp, views):
        return frozenset(op.uid for op in comp if views[op.uid].entries and views[op.uid].effects[_NONE])
    return _NONE


def _checkable(base: Context, comp, layouts: Mapping, loops: Mapping) -> bool:
    touched = {b for op in comp for b in op.buffers}
    if any(not rule_is_local(op.kind, base.target) for op in comp) or any(b in base.siblings for b in touched):
        return False
    if any(k in base.layouts for k in layouts) or any(k in base.loops for k in loops):
        return False
    return set(layouts) <= touched and set(loops) <= {op.name for op in comp}


def _converted(trial: Context, op) -> set[str]:
    return {b for uid, b in trial.convert if uid == op.uid}


def _op_views(trial: Context, op, written: Mapping, loops: Mapping, fallback: bool) -> _Views | None:
    """``op``'s views, or None when one that must be good is not (every view but the empty one of an op
    with buffers in ``W``), the whole view adds something, or (c) fails."""
    converted = _converted(trial, op)
    entries = tuple(b for b in dict.fromkeys(op.buffers) if b in written and b not in converted)
    if len(entries) > MAX_ENTRIES:
        return None
    private = frozenset({_LOOP} if op.name in loops else ()) | {(_VIEW, b) for b in converted
                                                                if (op.uid, b) in trial.views}
    full = frozenset(entries) | private
    effects: dict[frozenset, set | None] = {}
    for mask in range(1 << len(entries)):
        shown = frozenset(b for k, b in enumerate(entries) if mask >> k & 1)
        effect = _effect(trial, op, entries, private, shown, False, fallback)
        if effect is not None and effect and shown | effect != full:
            effect = None
        if effect is None and (shown or not entries):
            return None
        effects[shown] = effect
    if private and _effect(trial, op, entries, private, frozenset(entries), True, fallback) != set():
        return None
    if private and not effects[frozenset(entries)]:  # (c)
        return None
    return _Views(entries, private, effects, bool(converted))


def _every_root(comp, views: dict[int, _Views], written: Mapping) -> bool:
    """Every empty view good, (d) and (e)."""
    for v in views.values():
        if v.effects[_NONE] is None:
            return False
        every = frozenset(v.entries)
        for shown in v.effects:
            for b in v.entries:
                bigger = shown | {b}
                if b not in shown and not v.silent(shown) and (v.private or bigger != every) and v.silent(bigger):
                    return False
    return not _stuck(comp, views, written)


def _eager(comp, views: dict[int, _Views]) -> bool:
    """Every nonempty view that hides something is non-silent; the ops with buffers in ``W`` connected; an
    op reading through a converted view has a good empty view (a change to the buffer behind its view
    queues it, and it may then see nothing)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for op in comp:
        v = views[op.uid]
        if any(shown and v.silent(shown) for shown in v.non_full()) or (v.converts and v.effects[_NONE] is None):
            return False
        for b in v.entries:
            parent[find(b)] = find(v.entries[0])
    return len({find(b) for b in parent}) <= 1


def _effect(trial: Context, op, entries, private: frozenset, shown: frozenset, private_shown: bool,
            fallback: bool) -> set | None:
    """What ``op``'s rule adds to the view of ``trial`` showing ``shown`` of ``entries`` (and its
    ``private`` entries when ``private_shown``), or None when it raises or proposes anything ``trial``
    does not hold."""
    converted = _converted(trial, op)
    masked = {b: None for b in entries if b not in shown}
    for b in converted:  # a converted read sees its view, never the buffer's own layout
        masked[b] = trial.views.get((op.uid, b)) if private_shown else None
    layouts = MaskedLayouts(trial.layouts, masked) if masked else trial.layouts
    loop_hidden = _LOOP in private and not private_shown
    loops = MaskedLayouts(trial.loops, {op.name: None}) if loop_hidden else trial.loops
    view = RuleContext(trial.program, op_range(op, trial.rng), layouts, loops, fallback, trial.memo)
    trial.counts["rule runs"] += 1
    try:
        res = get_rule(op.kind, trial.target)(op, view, FREE)
    except Exception:  # noqa: BLE001  (a view no attempt reaches may fail any way; it only means "unproved")
        return None
    if not isinstance(res, RuleResult):
        res = RuleResult(res)
    if res.loops:
        return None
    effect: set = set()
    for name, lay in res.layouts.items():
        held = trial.views.get((op.uid, name)) if name in converted else trial.layouts.get(name)
        if name not in op.buffers or not _same(lay, held):
            return None
        if name in converted and not private_shown:
            effect.add((_VIEW, name))
        elif name in masked and name not in converted:
            effect.add(name)
    if res.loop is not None:
        if not _same(res.loop, trial.loops.get(op.name)):
            return None
        if loop_hidden:
            effect.add(_LOOP)
    return effect


def _same(new, held) -> bool:
    """``new`` is what the state holds: the entry a commit would leave unchanged, tag included."""
    return held is not None and (new is held or (new == held and new.tag == held.tag))


def _stuck(comp, views: dict[int, _Views], written: Mapping) -> bool:
    """Condition (e) fails: some nonempty set of written buffers is stuck (greatest one by deletion)."""
    users: dict[str, list[_Views]] = {}
    for op in comp:
        for b in views[op.uid].entries:
            users.setdefault(b, []).append(views[op.uid])
    missing = set(written)
    queue = list(written)
    while queue:
        b = queue.pop()
        if b not in missing:
            continue
        if all(v.silent(frozenset(x for x in v.entries if x not in missing)) for v in users[b]):
            continue
        missing.discard(b)
        queue.extend(x for v in users[b] for x in v.entries if x in missing)
    return bool(missing)
