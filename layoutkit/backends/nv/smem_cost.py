"""The shared-memory-aware model: io-aware plus the wavefronts (NV bank model,
:func:`layoutkit.targets.nv.bank_conflicts`) of every shared <-> fragment move, each charged as the
128 bytes a wavefront serves; and the price of converting a fragment's layout through shared memory.

One thread per row of a row-major 32x32 fp32 tile reads 16-byte vectors, 8 rows per phase, all in
the same 4 banks (8-way); one thread per column is conflict free:

>>> import layoutkit as lk
>>> from layoutkit.cost import Operand, Statement
>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 32), placeholder(1, 32)
>>> smem = lk.Layout([32, 32], lambda a, b: a * 32 + b)
>>> by_col = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
>>> by_row = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> def load(L):
...     return Statement("copy#0", "copy", (32, 32), L, (
...         Operand("s", "shared.dyn", "float32", (32, 32), False, (i, j), smem),
...         Operand("f", "local.fragment", "float32", (32, 32), True, (i, j))))
>>> [shared_rows([load(L)])[0].wavefronts for L in (by_col, by_row)]
[256, 32]
>>> conversion_cost(by_col, by_row, "float32")
Conversion(store_wavefronts=256, load_wavefronts=32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...algebra.layout import Layout
from ...algebra.shapes import placeholder
from ...caches import memoized
from ...cost.access import shared_access
from ...cost.attempt import Statement, StatementCost, check_statements
from ...cost.io_aware import IOAwareModel
from ...dtypes import element_bits
from ...errors import LayoutError
from ...fragment.fragment import Fragment
from ...scopes import FRAGMENT
from ...targets.nv.banks import BankReport, bank_conflicts
from ...targets.nv.hardware import WARP_SIZE
from ...targets.nv.swizzle import make_padded_layout

WAVEFRONT_BYTES = 128


def shared_instruction(vector: int, dtype: str, store: bool) -> str:
    """The shared-memory instruction moving ``vector`` elements of ``dtype`` per lane (at least 32 bits, at
    most 128: narrower accesses still occupy a bank word).

    >>> shared_instruction(4, "float32", store=True), shared_instruction(1, "float16", store=False)
    ('st.shared.b128', 'ld.shared.b32')
    """
    lane = min(16, max(4, vector * max(1, element_bits(dtype) // 8)))
    return f"{'st' if store else 'ld'}.shared.b{8 * lane}"


@memoized(maxsize=2048)
def operand_bank_report(loop_layout: Fragment, indices: tuple, smem: Layout, dtype: str,
                 store: bool) -> tuple[str, BankReport]:
    """The instruction and exact bank report of one shared operand (memoised: all inputs are immutable)."""
    arr, v = shared_access(loop_layout, indices, smem, dtype)
    inst = shared_instruction(v, dtype, store)
    return inst, bank_conflicts(smem, arr, dtype, inst, method="exact")


def shared_rows(statements: Sequence[Statement]) -> list[StatementCost]:
    """Wavefronts of every shared operand of a statement that also touches a fragment."""
    rows = []
    for st in statements:
        if st.loop_layout is None or not any(o.scope == FRAGMENT for o in st.operands):
            continue
        for op in st.operands:
            if not op.is_shared:
                continue
            what = f"{'store' if op.is_write else 'load'} {op.buffer} ({op.dtype})"
            if op.layout is None or isinstance(op.layout, Fragment) or op.indices is None:
                rows.append(StatementCost(st.name, what, 0, 0, "not modelled: no shared layout"))
                continue
            try:
                inst, rep = operand_bank_report(st.loop_layout, tuple(op.indices), op.layout, op.dtype, op.is_write)
            except LayoutError as err:
                rows.append(StatementCost(st.name, what, 0, 0, f"not modelled: {err}"))
                continue
            rows.append(StatementCost(st.name, f"{what} {inst}, {rep.instructions} instructions, {rep.ways}-way",
                                      rep.wavefronts * WAVEFRONT_BYTES, rep.wavefronts,
                                      f"ideal {rep.ideal_wavefronts} wavefronts"))
    return rows


@dataclass(frozen=True)
class Conversion:
    """Converting a fragment's layout through shared memory: store with ``src``, load with ``dst``,
    staged in a ``staging`` layout (``row-major`` or ``padded``)."""

    store_wavefronts: int
    load_wavefronts: int
    staging: str = field(default="row-major", repr=False, compare=False)

    @property
    def wavefronts(self) -> int:
        return self.store_wavefronts + self.load_wavefronts

    @property
    def bytes(self) -> int:
        return self.wavefronts * WAVEFRONT_BYTES


STAGINGS = ("row-major", "padded")
"""The staging layouts a conversion is priced (and lowered) with."""


def staging_layout(shape: Sequence[int], dtype: str, staging: str = "row-major") -> Layout:
    """The shared tile a conversion of a ``shape`` fragment is staged in: ``row-major`` or TileLang's
    ``padded`` layout (rank >= 2); the lowering stores and loads through the layout priced here.

    >>> print(staging_layout((4, 8), "float32"))
    Layout((4, 8) -> (32,), transform: (_i, _j) -> (_i * 8 + _j,))
    >>> int(staging_layout((8, 64), "float16", "padded").linear_table()[1, 0])
    72
    """
    if staging not in STAGINGS or (staging == "padded" and len(shape) < 2):
        raise LayoutError(f"a conversion is staged {' or '.join(STAGINGS)} (padded needs rank >= 2); found "
                          f"{staging!r} for shape {tuple(shape)}")
    if staging == "padded":
        return make_padded_layout(shape, dtype)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return Layout(list(shape), lambda *c: sum(x * s for x, s in zip(c, strides)))


def conversion_cost(src: Fragment, dst: Fragment, dtype: str, smem: Layout | None = None) -> Conversion:
    """Wavefronts of storing ``src`` to ``smem`` (row-major by default) and loading it back as
    ``dst``: the price free mode can set against re-rooting a component."""
    if src.input_shape != dst.input_shape:
        raise LayoutError(f"a conversion keeps the shape; found {src.input_shape} and {dst.input_shape}")
    shape = src.input_shape
    if smem is None:
        smem = staging_layout(shape, dtype)
    idx = tuple(placeholder(d, e) for d, e in enumerate(shape))
    out = []
    for frag, store in ((src, True), (dst, False)):
        arr, v = shared_access(frag, idx, smem, dtype)
        out.append(bank_conflicts(smem, arr, dtype, shared_instruction(v, dtype, store), method="exact").wavefronts)
    return Conversion(out[0], out[1])


def staged_conversion_cost(src: Fragment, dst: Fragment, dtype: str) -> Conversion:
    """The cheaper of staging the conversion in a row-major tile or in TileLang's padded layout (rows
    16 bytes apart in the bank cycle, so columns do not conflict); ties keep row-major.

    >>> import layoutkit as lk
    >>> by_col = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    >>> by_row = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
    >>> c = staged_conversion_cost(by_col, by_row, "float32")
    >>> c, c.staging
    (Conversion(store_wavefronts=32, load_wavefronts=32), 'padded')
    """
    best = conversion_cost(src, dst, dtype)
    if len(src.input_shape) >= 2:
        alt = conversion_cost(src, dst, dtype, staging_layout(src.input_shape, dtype, "padded"))
        if alt.wavefronts < best.wavefronts:
            best = Conversion(alt.store_wavefronts, alt.load_wavefronts, "padded")
    return best


class SharedMemoryAwareModel(IOAwareModel):
    """``mem`` = io-aware ``mem`` + 128 bytes per shared-memory wavefront of the component's
    shared <-> fragment moves."""

    name = "smem-aware"
    warp_size = WARP_SIZE

    def rows(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[StatementCost]:
        st = check_statements(statements)
        return super().rows(layouts, program, st) + shared_rows(st)

    def conversion_cost(self, src: Fragment, dst: Fragment, dtype: str, smem: Layout | None = None) -> Conversion:
        """Price of converting ``src`` to ``dst`` through shared memory (``smem``: the staging layout;
        default the cheaper of row-major and padded), charged by free mode as ``bytes``."""
        return conversion_cost(src, dst, dtype, smem) if smem is not None else staged_conversion_cost(src, dst, dtype)
