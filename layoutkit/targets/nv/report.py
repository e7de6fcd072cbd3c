"""Bank-conflict report: every shared layout x (operand loads by ldmatrix, accumulator store).

For a GEMM block tile (A ``[M, K]``, B ``[K, N]`` or ``[N, K]``, C ``[M, N]``) and a warp grid, each
shared layout choice (linear, padded, 32B, 64B, 128B swizzle) is priced for the three moves a tensor
core kernel makes through shared memory: ``ldmatrix.x4`` of A into the MMA A fragment, ``ldmatrix.x4``
(``.trans`` when B is ``[K, N]``) of B, and the ``st.shared`` of the accumulator fragment (2 elements
per lane and instruction).  Numbers are wavefronts per warp-level instruction (ideal: 4 for an x4
ldmatrix, 1 for a 32-bit store, 2 for a 64-bit one) and the conflict degree.

>>> print(format_bank_report(bank_report(64, 64, 64)))
layout  A ldmatrix.x4  B ldmatrix.x4.trans  C st.shared.b32
------  -------------  -------------------  ---------------
linear  32 (8-way)     32 (8-way)           8 (8-way)
padded  4              4                    1
32B     4              4                    1
64B     4              4                    1
128B    4              4                    1

With K = 32 the A tile has 64-byte rows: a 128B swizzle does not fit it (``n/a``) and the linear
layout is 4-way conflicted:

>>> print(format_bank_report(bank_report(64, 64, 32, layouts=("linear", "128B"))))
layout  A ldmatrix.x4  B ldmatrix.x4.trans  C st.shared.b32
------  -------------  -------------------  ---------------
linear  16 (4-way)     32 (8-way)           8 (8-way)
128B    n/a            4                    1
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import canonical_dtype, element_bits
from ...errors import LayoutError
from .banks import bank_conflicts
from .mma import make_mma_load_layout, make_mma_store_layout
from .swizzle import SHARED_LAYOUTS


@dataclass(frozen=True)
class BankRow:
    """One cell of the report: ``layout`` x ``operation`` (None counts: the layout does not apply)."""

    layout: str
    operation: str
    instruction: str
    instructions: int | None
    wavefronts: int | None
    ways: int | None
    ideal_per_instruction: float | None
    note: str = ""

    @property
    def per_instruction(self) -> float | None:
        return None if self.wavefronts is None or not self.instructions else self.wavefronts / self.instructions


def bank_report(
    M: int = 64,
    N: int = 64,
    K: int = 64,
    dtype: object = "float16",
    store_dtype: object | None = None,
    block_row_warps: int = 2,
    block_col_warps: int = 2,
    transpose_B: bool = False,
    layouts: tuple[str, ...] = tuple(SHARED_LAYOUTS),
) -> list[BankRow]:
    """Price every shared layout in ``layouts`` for the A/B ldmatrix loads and the C store.

    ``dtype``: the operand type (A, B); ``store_dtype``: the type C is stored in (default ``dtype``).
    """
    dt = canonical_dtype(dtype)
    st = canonical_dtype(store_dtype if store_dtype is not None else dtype)
    bits = element_bits(dt)
    wrt, wct = M // block_row_warps, N // block_col_warps
    frag_a = make_mma_load_layout("A", dt, block_row_warps, block_col_warps, wrt, wct, K)
    frag_b = make_mma_load_layout("B", dt, block_row_warps, block_col_warps, wrt, wct, K, transpose_B)
    frag_c = make_mma_store_layout(block_row_warps, block_col_warps, wrt, wct, dtype=dt)
    a_inst = "ldmatrix.x4" if bits <= 32 else "ld.shared.b64"
    b_inst = ("ldmatrix.x4" if transpose_B else "ldmatrix.x4.trans") if bits == 16 else (
        "ldmatrix.x4" if transpose_B and bits <= 32 else "ld.shared.b32")
    c_inst = "st.shared.b32" if element_bits(st) <= 16 else f"st.shared.b{2 * element_bits(st)}"
    moves = [
        ("A", a_inst, frag_a, frag_a.input_shape, dt),
        ("B", b_inst, frag_b, frag_b.input_shape, dt),
        ("C", c_inst, frag_c, frag_c.input_shape, st),
    ]
    rows: list[BankRow] = []
    for name in layouts:
        make = SHARED_LAYOUTS[name]
        for operand, inst, frag, shape, typ in moves:
            op = f"{operand} {inst}"
            try:
                smem = make(shape, typ)
            except LayoutError as err:
                rows.append(BankRow(name, op, inst, None, None, None, None, note=str(err).split(":")[0]))
                continue
            rep = bank_conflicts(smem, frag, typ, inst)
            ideal = rep.ideal_wavefronts / rep.instructions if rep.instructions else None
            rows.append(BankRow(name, op, inst, rep.instructions, rep.wavefronts, rep.ways, ideal))
    return rows


def format_bank_report(rows: list[BankRow]) -> str:
    """A text table: layouts down, operations across; cells are wavefronts per instruction, with the
    conflict degree when there is a conflict, ``n/a`` when the layout does not fit the tile."""
    layouts = list(dict.fromkeys(r.layout for r in rows))
    ops = list(dict.fromkeys(r.operation for r in rows))
    cell = {(r.layout, r.operation): r for r in rows}

    def text(r: BankRow | None) -> str:
        if r is None or r.wavefronts is None:
            return "n/a"
        per = r.per_instruction or 0.0
        value = f"{per:g}"
        return value if r.ways is None or r.ways <= 1 else f"{value} ({r.ways}-way)"

    table = [["layout", *ops]] + [[name, *(text(cell.get((name, op))) for op in ops)] for name in layouts]
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
