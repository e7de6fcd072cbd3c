"""The instruction-level plan of one warp-tiled NVIDIA GEMM tile: which tensor-core instruction, how the warps
split the tile, how each operand reaches the instruction, and the PTX names of the element types.

One :class:`GemmPlan` serves every NVIDIA GEMM consumer: the ``mma.sync`` lowering, the sm_90a ``wgmma``
lowering and the TileLang ``T.gemm`` TIR builder each hold one (built by :func:`gemm_plan`) next to what only
they know (solved layouts, register tables).  :data:`PTX_TYPES` is the one table from element types to the PTX
type names of those instructions.

Law: a plan's warp tiles cover its block tile exactly: ``warps[0] * warp_rows * m == M`` for ``mma.sync``
(``warps[0] / 4`` warp groups for ``wgmma``), ``warps[1] * warp_cols * n_dim == N``, and ``K`` is a whole
number of instruction k steps.

>>> p = gemm_plan("float16", "float16", "float32", 64, 64, 32, threads=128, warps=(2, 2))
>>> p.name, p.warp_rows, p.warp_cols, p.n_dim, p.local_a, p.local_b, p.local_c
('m16n8k16', 2, 2, 16, 8, 8, 8)
>>> p.a_load, p.b_load, p.ptx_types
('ldmatrix', 'ldmatrix.trans', ('f16', 'f16', 'f32'))
>>> gemm_plan("float16", "float16", "float32", 64, 64, 32, 128, (2, 2), arch="sm_75").issued
'm16n8k8'
>>> h = gemm_plan("float8_e4m3", "float8_e4m3", "float32", 128, 128, 64, 256, (4, 2), trans_b=True, arch="sm_90a",
...               instruction="wgmma")
>>> h.name, h.b_load, h.warp_rows, h.local_c
('m64n64k32', 'descriptor', 2, 32)
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import canonical_dtype, element_bits
from ...errors import UnsupportedError
from .hardware import WARP_SIZE
from .mma import MmaAtom, arch_number, mma_atom
from .partition import WARP_GROUP

MMA = "mma"
"""``mma.sync``: one warp per instruction, ``m16n8k{256 / bits}``."""
WGMMA = "wgmma"
"""``wgmma.mma_async``: one warp group (4 warps along M) per instruction, ``m64nNk{256 / bits}``, operands
read from shared memory through descriptors."""

PTX_TYPES: dict[str, tuple[str | None, str | None]] = {
    "float16": ("f16", "f16"),
    "bfloat16": ("bf16", None),
    "float32": ("tf32", "f32"),  # a float32 operand runs as tf32
    "int8": ("s8", None),
    "uint8": ("u8", None),
    "int32": (None, "s32"),
    "float8_e4m3": ("e4m3", None),
    "float8_e4m3fn": ("e4m3", None),  # PTX e4m3 has no infinities: the fn format
    "float8_e5m2": ("e5m2", None),
}
"""Element type -> its PTX type name (``mma.sync`` / ``wgmma``) as an operand and as an accumulator (None: the
type is not one)."""

LDMATRIX = "ldmatrix"
"""The operand is read with ``ldmatrix`` (its rows run along k: the fragment's layout)."""
LDMATRIX_TRANS = "ldmatrix.trans"
"""The operand is read with ``ldmatrix.trans`` (16-bit elements stored with M / N contiguous)."""
REGISTERS = "registers"
"""Each register is loaded from its own element (an 8- / 32-bit operand stored with M / N contiguous, which
``ldmatrix.trans`` cannot transpose)."""
WORDS = "words"
"""Words of relabelled columns (tf32) or ``prmt``-transposed 4 x 4 byte blocks (int8) of a B stored ``[K, N]``:
a choice of the ``mma.sync`` lowering, which relabels the accumulator's columns to match."""
DESCRIPTOR = "descriptor"
"""``wgmma`` reads the operand from shared memory through a matrix descriptor."""


def ptx_type(dtype: object, role: str = "operand") -> str:
    """The PTX type name of ``dtype`` as an ``"operand"`` or an ``"accumulator"`` (:data:`PTX_TYPES`); a type
    that is none raises :class:`~layoutkit.errors.UnsupportedError`.

    >>> ptx_type("bfloat16"), ptx_type("float32"), ptx_type("float32", "accumulator"), ptx_type("int32", "accumulator")
    ('bf16', 'tf32', 'f32', 's32')
    """
    name = canonical_dtype(dtype)
    column = ("operand", "accumulator").index(role)
    ptx = PTX_TYPES.get(name, (None, None))[column]
    if ptx is None:
        found = sorted(k for k, v in PTX_TYPES.items() if v[column] is not None)
        raise UnsupportedError(f"no NVIDIA tensor-core {role} type for {name}; {role} types: {found}")
    return ptx


def mma_sync_opcode(shape: str, a_dtype: object, b_dtype: object, c_dtype: object) -> str:
    """The ``mma.sync`` opcode of instruction ``shape`` (``"m16n8k16"``) on these element types (row-major A,
    column-major B, accumulator in and out alike).

    >>> mma_sync_opcode("m16n8k32", "int8", "int8", "int32")
    'mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32'
    """
    c = ptx_type(c_dtype, "accumulator")
    return f"mma.sync.aligned.{shape}.row.col.{c}.{ptx_type(a_dtype)}.{ptx_type(b_dtype)}.{c}"


def operand_load(instruction: str, bits: int, k_major: bool) -> str:
    """How an operand of ``bits``-bit elements reaches the instruction: ``wgmma`` through a descriptor; for
    ``mma.sync`` ``ldmatrix`` when its rows run along k (``k_major``), ``ldmatrix.trans`` for 16-bit elements
    otherwise, else one load per register.

    >>> operand_load("mma", 16, False), operand_load("mma", 8, False), operand_load("wgmma", 8, True)
    ('ldmatrix.trans', 'registers', 'descriptor')
    """
    if instruction == WGMMA:
        return DESCRIPTOR
    if k_major:
        return LDMATRIX
    return LDMATRIX_TRANS if bits == 16 else REGISTERS


@dataclass(frozen=True)
class GemmPlan:
    """One ``M x N x K`` GEMM tile on ``warps = (m_warps, n_warps)`` warps (M fastest): the instruction
    (``mma`` / ``wgmma``, one instruction ``shape = (m, n, k)``, ``k_split`` instructions along k per k step:
    sm_75 runs a k16 step as two ``m16n8k8``), each warp's (``mma``) or warp group's (``wgmma``) grid of
    ``warp_rows x warp_cols`` instruction tiles of ``m x n_dim`` (``mma``: ``n_dim = 16`` is issued as two
    ``n8``), the operand loads (:func:`operand_load`, or :data:`WORDS`) and the element types, with ``trans_a``
    (A stored ``[K, M]``) and ``trans_b`` (B stored ``[N, K]``)."""

    instruction: str
    a_dtype: str
    b_dtype: str
    c_dtype: str
    M: int
    N: int
    K: int
    warps: tuple[int, int]
    trans_a: bool
    trans_b: bool
    shape: tuple[int, int, int]
    n_dim: int
    k_split: int
    a_load: str
    b_load: str
    arch: int

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def n(self) -> int:
        return self.shape[1]

    @property
    def k(self) -> int:
        """K of one k step (one instruction, or ``k_split`` issued ones)."""
        return self.shape[2]

    @property
    def name(self) -> str:
        """The instruction shape, ``m16n8k16`` (PTX's spelling)."""
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def issued(self) -> str:
        """The shape of each issued instruction (``k / k_split``)."""
        return f"m{self.m}n{self.n}k{self.k // self.k_split}"

    @property
    def bits(self) -> int:
        return element_bits(self.a_dtype)

    @property
    def threads(self) -> int:
        return WARP_SIZE * self.warps[0] * self.warps[1]

    @property
    def group(self) -> int:
        """Warps along M of one instruction (4 for ``wgmma``)."""
        return WARP_GROUP if self.instruction == WGMMA else 1

    @property
    def warp_rows(self) -> int:
        return self.M * self.group // self.warps[0] // self.m

    @property
    def warp_cols(self) -> int:
        return self.N // self.warps[1] // self.n_dim

    @property
    def local_a(self) -> int:
        """A registers per lane of one ``m x k`` tile (0: read from shared memory)."""
        return 0 if self.a_load == DESCRIPTOR else self.m * self.k // WARP_SIZE

    @property
    def local_b(self) -> int:
        """B registers per lane of one ``k x n_dim`` tile (0: read from shared memory)."""
        return 0 if self.b_load == DESCRIPTOR else self.n_dim * self.k // WARP_SIZE

    @property
    def local_c(self) -> int:
        """Accumulator registers per thread of one ``m x n_dim`` tile."""
        return self.m * self.n_dim // (WARP_SIZE * self.group)

    @property
    def ptx_types(self) -> tuple[str, str, str]:
        """The PTX types of A, B and the accumulator (:data:`PTX_TYPES`)."""
        return ptx_type(self.a_dtype), ptx_type(self.b_dtype), ptx_type(self.c_dtype, "accumulator")

    @property
    def atom(self) -> MmaAtom:
        """The ``mma.sync`` operand register layout (:func:`~layoutkit.targets.nv.mma_atom`)."""
        return mma_atom(self.a_dtype)


def instruction_shape(instruction: str, a_dtype: object, b_dtype: object, c_dtype: object,
                      arch: str | int) -> tuple[int, int]:
    """``(k, k_split)`` of ``instruction`` (``"mma"`` / ``"wgmma"``) on these element types and arch: the k of
    one k step (``256 / bits``) and the instructions issued per step (sm_75's k16 step is two ``m16n8k8``).
    Element types without a PTX type, of different widths, integers not accumulating in int32 (or floats in
    int32) and an arch without the instruction raise :class:`~layoutkit.errors.UnsupportedError`.

    >>> instruction_shape("mma", "int8", "int8", "int32", "sm_80"), instruction_shape("mma", "float16", "float16",
    ...                                                                               "float32", "sm_75")
    ((32, 1), (16, 2))
    """
    a, b, c = (canonical_dtype(x) for x in (a_dtype, b_dtype, c_dtype))
    sm = arch_number(arch)
    types = tuple(ptx_type(x, role) for x, role in ((a, "operand"), (b, "operand"), (c, "accumulator")))
    bits = element_bits(a)
    where = f"{a} x {b} -> {c} on sm_{sm}"
    if element_bits(b) != bits:
        raise UnsupportedError(f"GEMM plan: {where}: A and B must have one width")
    if (types[0] in ("s8", "u8")) != (types[2] == "s32") or (types[1] in ("s8", "u8")) != (types[2] == "s32"):
        raise UnsupportedError(f"GEMM plan: {where}: integer operands accumulate in int32, float ones in floats")
    if instruction == WGMMA:
        if not 90 <= sm < 100:
            raise UnsupportedError(f"GEMM plan: {where}: wgmma needs sm_90")
        return 256 // bits, 1
    if instruction != MMA:
        raise UnsupportedError(f"GEMM plan: instruction {instruction!r}; expected {MMA!r} or {WGMMA!r}")
    if sm < 75 or (sm < 80 and a != "float16"):
        raise UnsupportedError(f"GEMM plan: {where}: mma.sync m16n8k16 / m16n8k32 / m16n8k8.tf32 need sm_80+ "
                               "(sm_75: float16 only)")
    return 256 // bits, (2 if sm < 80 else 1)


class PlannedGemm:
    """What a GEMM lowering that holds a :class:`GemmPlan` (``self.plan``) reads off it by the names the lowerings
    and printers use: the operand type, the block tile ``bM x bN x bK`` and whether B is stored ``[N, K]``."""

    plan: GemmPlan

    @property
    def dtype(self) -> str:
        return self.plan.a_dtype

    @property
    def bM(self) -> int:
        return self.plan.M

    @property
    def bN(self) -> int:
        return self.plan.N

    @property
    def bK(self) -> int:
        return self.plan.K

    @property
    def tb(self) -> bool:
        return self.plan.trans_b



def gemm_plan(a_dtype: object, b_dtype: object, c_dtype: object, M: int, N: int, K: int, threads: int,
              warps: tuple[int, int], *, trans_a: bool = False, trans_b: bool = False, arch: str | int = "sm_80",
              instruction: str = MMA) -> GemmPlan:
    """The :class:`GemmPlan` of an ``M x N x K`` tile (A ``[M, K]``, ``[K, M]`` with ``trans_a``; B ``[K, N]``,
    ``[N, K]`` with ``trans_b``) on ``threads`` threads split as ``warps``.  Raises
    :class:`~layoutkit.errors.UnsupportedError` naming what has no instruction: element types without a PTX type
    (:data:`PTX_TYPES`) or of different widths, an arch without the instruction, a warp split that does not
    cover the tile in whole instruction tiles, ``K`` not a whole number of k steps, 8-bit ``wgmma`` operands
    not both K-major.

    >>> try:
    ...     gemm_plan("float16", "float16", "float32", 64, 64, 40, 128, (2, 2))
    ... except UnsupportedError as e:
    ...     print(e)
    GEMM plan: K = 40 is not a multiple of the instruction k = 16 (m16n8k16)
    """
    a, b, c = (canonical_dtype(x) for x in (a_dtype, b_dtype, c_dtype))
    k, k_split = instruction_shape(instruction, a, b, c, arch)
    sm = arch_number(arch)
    m_warps, n_warps = (int(w) for w in warps)
    group = WARP_GROUP if instruction == WGMMA else 1
    m = 64 if instruction == WGMMA else 16
    if m_warps <= 0 or n_warps <= 0 or threads != WARP_SIZE * m_warps * n_warps or m_warps % group:
        raise UnsupportedError(f"GEMM plan: {threads} threads are not {m_warps} x {n_warps} warps"
                               + (" with whole warp groups along M" if group > 1 else ""))
    if M % (m_warps // group * m) or N % (n_warps * 8):
        raise UnsupportedError(f"GEMM plan: tile {M} x {N} on {m_warps} x {n_warps} warps: each warp"
                               f"{' group' if group > 1 else ''} needs a multiple of {m} rows and 8 columns")
    warp_n = N // n_warps
    if instruction == WGMMA:
        n_dim = warp_n
        if n_dim > 256:
            raise UnsupportedError(f"GEMM plan: a warp group's {n_dim} columns exceed wgmma's n <= 256")
        if element_bits(a) != 16 and (trans_a or not trans_b):
            raise UnsupportedError(f"GEMM plan: wgmma with {a} operands reads both tiles K-major (A [M, K], "
                                   "B [N, K]): 16-bit types alone take a transpose")
    else:
        n_dim = 16 if warp_n % 16 == 0 else 8
    shape = (m, n_dim if instruction == WGMMA else 8, k)
    if K % k:
        raise UnsupportedError(f"GEMM plan: K = {K} is not a multiple of the instruction k = {k} "
                               f"(m{shape[0]}n{shape[1]}k{k})")
    bits = element_bits(a)
    return GemmPlan(instruction, a, b, c, int(M), int(N), int(K), (m_warps, n_warps), bool(trans_a), bool(trans_b),
                    shape, n_dim, k_split, operand_load(instruction, bits, not trans_a),
                    operand_load(instruction, bits, bool(trans_b)), sm)


__all__ = ["DESCRIPTOR", "LDMATRIX", "LDMATRIX_TRANS", "MMA", "PTX_TYPES", "REGISTERS", "WGMMA", "WORDS",
           "GemmPlan", "gemm_plan", "instruction_shape", "mma_sync_opcode", "operand_load", "ptx_type"]
