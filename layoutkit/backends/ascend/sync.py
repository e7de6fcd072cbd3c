"""Cross-pipe ordering of Ascend statements: which ``SetFlag`` / ``WaitFlag`` pairs a new statement needs.

Each pipe (MTE2, MTE1, M, FIX, V, MTE3) runs in order; two statements on different pipes that touch one buffer
need a ``HardEvent`` pair between them unless an earlier pair already orders them.  :class:`SyncState` tracks,
per buffer, its last writer and the readers since, and per pipe pair the last statement a pair covered.
"""

from __future__ import annotations

from ...errors import UnsupportedError
from . import ir

EVENTS = {("MTE2", "MTE1"), ("MTE1", "MTE2"), ("MTE1", "M"), ("M", "MTE1"), ("M", "FIX"), ("FIX", "M"),
          ("MTE2", "M"), ("M", "MTE2"), ("FIX", "MTE2"), ("MTE2", "FIX"), ("MTE2", "V"), ("V", "MTE2"),
          ("V", "MTE3"), ("MTE3", "V"), ("MTE2", "MTE3"), ("MTE3", "MTE2")}
"""``HardEvent`` pairs the printer may emit (all exist in Ascend C)."""


class Touch:
    """What a statement (or a loop of them, all on one pipe) touches, for :class:`SyncState`."""

    def __init__(self, pipe: str, reads: tuple, writes: tuple):
        self.pipe, self.reads, self.writes = pipe, reads, writes

    @staticmethod
    def of(stmt):
        if not isinstance(stmt, ir.For):
            return stmt
        inner = [Touch.of(s) for s in stmt.body]
        pipes = {t.pipe for t in inner}
        if len(pipes) != 1:
            raise UnsupportedError(f"a loop over pipes {sorted(pipes)} cannot be ordered as one statement")
        return Touch(pipes.pop(), tuple(b for t in inner for b in t.reads), tuple(b for t in inner for b in t.writes))


def label_of(stmt) -> str:
    return getattr(stmt, "label", "") or (label_of(stmt.body[0]) if isinstance(stmt, ir.For) else "")


class SyncState:
    """Which cross-pipe orderings a new statement needs: per buffer the last write and the reads since, and
    per pipe pair the last statement already ordered by a SetFlag/WaitFlag pair.

    Plain: the SetFlag goes right before its WaitFlag, covering everything the source pipe issued.  Eager
    (``slot_of`` given, double buffering): the SetFlag goes right after the source pipe's last statement on
    the same buffer slot (its ``EVENT_ID`` the slot), so it covers what the consumer needs and no more;
    through a buffer with no slot it goes after the source pipe's last statement."""

    def __init__(self, slot_of=None):
        self.slot_of = slot_of
        self.eager = slot_of is not None
        self.n = 0
        self.last: dict[str, int] = {}                  # pipe -> index of its last statement
        self.synced: dict[tuple[str, str], int] = {}    # (src pipe, dst pipe) -> src statement index covered
        self.writer: dict[str, tuple[str, int]] = {}
        self.readers: dict[str, list[tuple[str, int]]] = {}
        self.on_slot: dict[tuple[str, int], int] = {}   # (pipe, slot) -> its last statement on that slot
        self.where: dict[int, int] = {}                 # statement index -> its body position

    def before(self, stmt) -> list[tuple[str, str, int, int]]:
        """The ``(src pipe, dst pipe, body position to set after, event id)`` orderings ``stmt`` needs; call
        :meth:`placed` with the statement's body position next."""
        pipe = stmt.pipe
        deps: list[tuple[str, int, str]] = []  # (pipe, statement, the buffer the two share)
        for b in stmt.reads:
            deps += [(*self.writer[b], b)] if b in self.writer else []
        for b in stmt.writes:
            deps += ([(*self.writer[b], b)] if b in self.writer else []) + [(q, i, b) for q, i in
                                                                          self.readers.get(b, [])]
        latest: dict[str, tuple[int, str]] = {}
        for q, i, b in deps:
            if q != pipe and i > self.synced.get((q, pipe), -1) and i >= latest.get(q, (-1, ""))[0]:
                latest[q] = (i, b)
        out = []
        for q in sorted(latest):
            slot = self.slot_of(latest[q][1]) if self.eager else None
            anchor = self.last[q] if slot is None else self.on_slot[(q, slot)]
            self.synced[(q, pipe)] = anchor
            out.append((q, pipe, self.where.get(anchor, 0), slot or 0))
        for b in stmt.reads:
            self.readers.setdefault(b, []).append((pipe, self.n))
        for b in stmt.writes:
            self.writer[b] = (pipe, self.n)
            self.readers[b] = []
        for b in stmt.reads + stmt.writes:
            slot = self.slot_of(b) if self.eager else None
            if slot is not None:
                self.on_slot[(pipe, slot)] = self.n
        self.last[pipe] = self.n
        self.n += 1
        return out

    def placed(self, at: int) -> None:
        """The body position of the statement :meth:`before` just saw."""
        self.where[self.n - 1] = at


__all__ = ["EVENTS", "SyncState", "Touch", "label_of"]
