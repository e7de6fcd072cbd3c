"""The reducer readers of the TileLang walk (:mod:`.tilelang_walk`): TileLang 0.1.15's reducer v2.

``T.alloc_reducer(shape, dtype, op=...)`` is a ``local.reducer`` buffer (its op in the block's
``reducer_info_v2`` annotation), ``T.reducer_init(acc)`` and ``T.finalize_reducer(acc, dst)`` are tile ops
(the legacy in-place form reaches the pass already rewritten into these), and ``T.reducer_update(acc[i],
x)`` is a call inside a parallel loop: an update of the loop op (see :mod:`layoutkit.infer.reducers`), not a
read of ``acc``.  A contribution is *replica-safe* when it reads only fragments, shared and global memory.
TileLang fuses a nest of two or more loops that touches no fragment (constant power-of-two extents) into one
loop before laying it out, so an update index using its variables is no plain loop variable there (the
update takes the wide plan).  A ``T.annotate_layout`` of a reducer (a user-pinned PartialFragment, from
which TileLang derives the update loops' layouts) is refused by name.  A mixin of the walker.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from ..scopes import REDUCER
from .tilelang_ir import nodes

__all__ = ["REDUCER_INFO", "Reducers", "UPDATE"]

UPDATE = "tl.reducer_update"
REDUCER_INFO = "reducer_info_v2"
_SAFE_SCOPES = ("local.fragment", "shared", "shared.dyn", "global")


class Reducers:
    """Readers of ``reducer_init`` / ``finalize_reducer`` and of the updates of a parallel loop."""

    p: Any
    tirx: Any
    func: Any

    def region(self, arg, what: str, any_shared_start: bool = False):  # pragma: no cover - the walker's
        raise NotImplementedError

    def reducer_op(self, buf) -> str:
        """The combine op ``T.alloc_reducer`` gave ``buf`` (``sum`` when no annotation says)."""
        t = self.tirx
        for block in nodes(self.func.body, t.SBlock):
            info = block.annotations.get(REDUCER_INFO)
            if info is None:
                continue
            for data, fields in info.items():
                if data.same_as(buf.data) and "op" in fields:
                    return str(fields["op"])
        return "sum"

    def reducer_init(self, call) -> None:
        what = f"T.reducer_init `{call}`"
        self.p.reducer_init(self.region(call.args[0], what).buffer)

    def finalize_reducer(self, call) -> None:
        what = f"T.finalize_reducer `{call}`"
        acc, dst = self.region(call.args[0], what).buffer, self.region(call.args[1], what).buffer
        self.p.finalize_reducer(acc, dst)

    def updates(self, body, loop_var, where: str, indices, fused: bool) -> list:
        """The ``(reducer, index fn, flags)`` updates of a parallel loop body; ``indices`` reads an index
        list of a buffer as Program expressions; ``fused``: TileLang fuses the nest into one loop."""
        t = self.tirx
        out = []
        for call in nodes(body, t.Call):
            if getattr(call.op, "name", "") != UPDATE:
                continue
            target, value = call.args[0], call.args[1]
            acc = self._reducer_buffer(target.buffer)
            ix = indices(list(target.indices), acc, loop_var, where)
            safe = all(self._safe(load.buffer) for load in _loads(value, t))
            out.append((acc, _const_fn(ix), {"safe": safe, "fused": fused}))
        return out

    def _safe(self, buf) -> bool:
        return buf.scope() in _SAFE_SCOPES

    def _reducer_buffer(self, buf):  # pragma: no cover - the walker's
        raise NotImplementedError

    def check_reducer_annotation(self, name: str, where: str) -> None:
        if self.p.buffers[name].scope == REDUCER:
            raise UnsupportedError(f"from_prim_func: layout_map of {where} pins reducer {name} (T.annotate_layout "
                                   f"with a PartialFragment), from which TileLang 0.1.15 derives the update loops' "
                                   f"layouts; not supported: expected reducers laid out by their update sites")


def _loads(e, t) -> list:
    out: list = []
    t.stmt_functor.post_order_visit(t.Evaluate(e), lambda n: out.append(n) if isinstance(n, t.BufferLoad) else None)
    return out


def _const_fn(indices):
    return lambda *_vars: indices
