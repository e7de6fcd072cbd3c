"""TileLang's thread bounds, as the adapter's walk tracks them: the threads each tile op runs on.

TileLang 0.1.15's LayoutInference lays every op out on ``ComputeThreadBounds``: the constant bound its
analyzer holds for ``threadIdx.x`` at the op, i.e. the launch's ``[0, threads)`` narrowed by the
enclosing ``if`` conditions (``if tx < 128`` leaves ``[0, 128)``, its ``else`` ``[128, threads)``), and
``[0, 1)`` in a kernel with no ``threadIdx.x`` launch (no ``T.Kernel``; ``T.thread_binding`` loops are
not launches).  The walk keeps an analyzer the same way (``let`` bindings included) and builds the ops
of a narrowed branch inside :meth:`~layoutkit.infer.Program.thread_bounds`.  A launch grown past the
block before the pass (sm_90 warp specialisation adds a producer warp group) is left to the target's
thread range, which puts the consumers after the producers.

Needs TileLang (the walk's mixin; see ``tests/test_frontend_tilelang_bounds.py``).
"""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from .tilelang_ir import int_value

__all__ = ["ThreadBounds"]


class ThreadBounds:
    """Mixin of the walker (which holds ``self.p``, the Program, and walks with ``self.stmt``)."""

    p: Any

    def stmt(self, s) -> None:  # pragma: no cover - the walker's
        raise NotImplementedError

    def _init_bounds(self) -> None:
        from tilelang import tvm

        self._analyzer = tvm.arith.Analyzer()
        self._tx = None  # the threadIdx.x variable, once its launch is walked

    def _launch(self, s) -> None:
        """An ``AttrStmt``: a ``threadIdx.x`` launch of the block's threads bounds the variable to it."""
        from tilelang import tvm

        if s.attr_key == "thread_extent" and str(s.node.thread_tag) == "threadIdx.x" \
                and int_value(s.value, "threadIdx.x extent") == self.p.threads:
            self._tx = s.node.var
            self._analyzer.bind(s.node.var, tvm.ir.Range.from_min_extent(0, s.value), allow_override=True)

    def _bind(self, s) -> None:
        """A ``Bind`` (``tx = T.get_thread_binding()`` and other lets): the analyzer sees through it."""
        self._analyzer.bind(s.var, s.value, allow_override=True)  # a variable bound twice keeps the last

    def _bounds(self) -> tuple[int, int]:
        """``(min, extent)`` of the threads reaching the statement being walked (the whole block without
        a ``threadIdx.x`` launch or a condition on it)."""
        if self._tx is None:
            return (0, self.p.threads)
        b = self._analyzer.const_int_bound(self._tx)
        return (int(b.min_value), int(b.max_value) - int(b.min_value) + 1)

    def _guarded(self, cond, body) -> None:
        """Walk ``body`` under ``cond``: its ops run on the threads ``cond`` leaves."""
        with self._analyzer.constraint_scope(cond):
            lo, n = self._bounds()
            if n <= 0 or lo < 0 or lo + n > self.p.threads:
                raise UnsupportedError(f"from_prim_func: `if {cond}`: threadIdx.x in [{lo}, {lo + n}) under the "
                                       f"condition; expected a non-empty range of the block's {self.p.threads} "
                                       f"threads")
            with self.p.thread_bounds(lo, n):
                self.stmt(body)
