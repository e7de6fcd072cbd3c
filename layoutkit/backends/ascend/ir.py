"""A small statement IR of Ascend C cube intrinsics (separate from the NVIDIA per-thread IR of :mod:`.ir`).

A :class:`Kernel` has global parameters (GM tensors, flat and row-major), local buffers (L1 / L0A / L0B /
L0C, addressed in elements of the buffer's dtype, each holding the canonical fractal image described by its
:class:`~layoutkit.targets.ascend.FractalInfo`; UB buffers, plain ND, one per vector core) and two bodies of
statements: ``body`` runs on the cube core (AIC) and ``vector`` on each of its two vector cores (AIV, the
loop variable ``sub`` is the core's ``GetSubBlockIdx()``).  Each statement names the hardware pipe it runs
on (``MTE2``: GM -> L1 / UB, ``MTE1``: L1 -> L0, ``M``: the cube, ``FIX``: L0C -> GM, ``V``: vector
ops, ``MTE3``: UB -> GM), the buffers it reads and writes, and the program op it came from (``label``, used
in errors).  The cores meet through ``CrossCoreSetFlag`` / ``CrossCoreWaitFlag`` (mode 2: the cube and its
two vector cores).

Parameter structs mirror the real Ascend C ones field for field; the printer (:mod:`.ascend_c`) spells the
snake_case fields in camelCase (``dst_nz_c0_stride`` -> ``dstNzC0Stride``).  ``Nd2NzParams`` is the one of
:mod:`layoutkit.targets.ascend.movement`, so the executor runs it through the same ND2NZ model.

>>> p = LoadData2DParams(start_index=0, repeat_times=64, src_stride=1)
>>> s = LoadData("A_l0", 0, "A_l1", 0, p, label="copy#2")
>>> s.pipe, s.reads, s.writes
('MTE1', ('A_l1',), ('A_l0',))
>>> cpp_name("dst_nz_c0_stride"), cpp_name("cmatrix_init_val")
('dstNzC0Stride', 'cmatrixInitVal')
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ...targets.ascend import FractalInfo, Nd2NzParams
from .scopes import L0A, L0B, L0C, L1, UB
from .tiles import TileLoop, origin_extents, swizzle_coord, tile_env

__all__ = [
    "GlobalParam", "LocalBuffer", "Nd2NzParams", "LoadData2DParams", "MmadParams", "FixpipeParamsV220",
    "InitConstValueParams", "InitConstValue", "CopyGmToL1", "LoadData", "Mmad", "Fixpipe", "SetFlag",
    "WaitFlag", "SetAtomic", "PipeBarrier", "Comment", "For", "Offset", "Stmt", "Kernel", "cpp_name", "struct_fields",
    "POSITIONS", "flatten", "resolve", "DataCopyExtParams", "CopyGmToUb", "CopyUbToGm", "VecOp", "CrossCoreSetFlag",
    "CrossCoreWaitFlag", "PerCore", "VEC_BINARY", "VEC_SCALAR", "VEC_UNARY", "offset", "linear", "bind_params",
    "Pick", "Guard", "TileLoop", "swizzle_coord", "tile_env", "value_of", "origin_extents",
]

POSITIONS = {L1: ("A1", "B1"), L0A: ("A2",), L0B: ("B2",), L0C: ("CO1",), UB: ("VECCALC",)}
"""Ascend C ``TPosition`` of each on-chip scope (L1 holds A1 or B1 operands)."""


def cpp_name(field: str) -> str:
    """snake_case -> the Ascend C camelCase field name.

    >>> cpp_name("src_nd_matrix_stride")
    'srcNdMatrixStride'
    """
    head, *rest = field.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def struct_fields(params) -> list[tuple[str, object]]:
    """``[(Ascend C field name, value)]`` of a parameter struct, in declaration order.

    >>> struct_fields(FixpipeParamsV220(64, 32, 64, 32))[:2]
    [('nSize', 64), ('mSize', 32)]
    """
    return [(cpp_name(f.name), getattr(params, f.name)) for f in fields(params)]


# ---- loop-affine offsets ------------------------------------------------------------------------

@dataclass(frozen=True)
class Offset:
    """``base + stride * var + sum(s * v for v, s in terms)``: an element offset that moves with loop
    variables (``var`` the innermost; ``terms`` the enclosing loops, added when tile loops are rolled)."""

    base: int
    stride: int
    var: str
    terms: tuple[tuple[str, int], ...] = ()


def linear(x: int | Offset) -> tuple[int, tuple[tuple[str, int], ...]]:
    """``(base, ((var, stride), ...))`` of an offset, the terms sorted by variable.

    >>> linear(Offset(4, 2, "kt0", (("ti", 8),))), linear(3)
    ((4, (('kt0', 2), ('ti', 8))), (3, ()))
    """
    if isinstance(x, Offset):
        return x.base, tuple(sorted(((x.var, x.stride),) + x.terms))
    return x, ()


def offset(base: int, terms) -> int | Offset:
    """The offset ``base + sum(stride * var)`` (a plain int without terms); zero strides are dropped.

    >>> offset(5, [("sub", 0)]), offset(5, [("sub", 3)])
    (5, Offset(base=5, stride=3, var='sub', terms=()))
    """
    terms = [(v, s) for v, s in terms if s]
    if not terms:
        return base
    (v, s), *rest = terms
    return Offset(base, s, v, tuple(rest))


def resolve(x: int | Offset | Pick, env: dict[str, int]) -> int:
    """The value of an offset for the loop variables in ``env``.

    >>> resolve(Offset(128, 64, "kt0"), {"kt0": 2}), resolve(7, {})
    (256, 7)
    """
    if isinstance(x, Pick):
        return resolve(x.tail if env[x.var] < x.full else x.value, env)
    base, terms = linear(x)
    return base + sum(s * env[v] for v, s in terms)


@dataclass(frozen=True)
class Pick:
    """``var < full ? tail : value``: a field whose value differs between the full tiles and the tail tiles
    of one dimension (``var`` is the tile's origin extent, ``mActual`` or ``nActual``) and is not affine in it.

    >>> resolve(Pick("nActual", 64, 0, 7), {"nActual": 8}), resolve(Pick("nActual", 64, 0, 7), {"nActual": 64})
    (7, 0)
    """

    var: str
    full: int
    value: int | Offset | Pick
    tail: int | Offset | Pick


def value_of(x, env: dict[str, int]):
    """A struct field or offset evaluated for ``env`` (a :class:`PerCore` field for the core ``env["sub"]``).

    >>> value_of(Offset(0, 1, "mActual"), {"mActual": 36}), value_of(PerCore((32, 4)), {"sub": 1}), value_of(True, {})
    (36, 4, True)
    """
    if isinstance(x, PerCore):
        return x.values[env["sub"]]
    if isinstance(x, (Offset, Pick)):
        return resolve(x, env)
    return x


@dataclass(frozen=True)
class PerCore:
    """A struct field whose value depends on the vector core: ``values[sub]`` (a tail tile's row count)."""

    values: tuple[int, ...]


def bind_params(params, env: dict[str, int]):
    """``params`` with its :class:`PerCore` fields resolved for the vector core ``env["sub"]``.

    >>> bind_params(DataCopyExtParams(PerCore((32, 4)), 32, 0, 256), {"sub": 1}).block_count
    4
    """
    changes = {f.name: value_of(getattr(params, f.name), env) for f in fields(params)
               if isinstance(getattr(params, f.name), (PerCore, Offset, Pick))}
    return replace(params, **changes) if changes else params


# ---- declarations ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GlobalParam:
    """A GM tensor passed to the kernel (``GM_ADDR``), row-major ``shape``."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class LocalBuffer:
    """An on-chip buffer: ``position`` (A1, B1, A2, B2, CO1; VECCALC for UB), ``size`` in elements and the
    fractal ``image`` it holds (its storage is ``image.storage_shape`` flattened; ``None`` for a UB buffer,
    which is ND, row-major, one per vector core)."""

    name: str
    dtype: str
    position: str
    size: int
    image: FractalInfo | None

    @property
    def is_ub(self) -> bool:
        return self.position == "VECCALC"


# ---- parameter structs (fields as in Ascend C) ----------------------------------------------------

@dataclass(frozen=True)
class LoadData2DParams:
    """``LoadData2DParams``: ``repeat_times`` fractals (512 bytes each); fractal ``t`` is read from source
    fractal ``start_index + t * src_stride`` and written ``t * (1 + dst_gap)`` fractals into the destination;
    ``if_transpose`` transposes each 16 x 16 fractal (16-bit types)."""

    start_index: int
    repeat_times: int
    src_stride: int
    dst_gap: int = 0
    if_transpose: bool = False


@dataclass(frozen=True)
class MmadParams:
    """``MmadParams``: C[m, n] (+)= A[m, k] @ B[k, n]; ``cmatrix_init_val`` starts C at zero."""

    m: int
    n: int
    k: int
    cmatrix_init_val: bool


@dataclass(frozen=True)
class FixpipeParamsV220:
    """``FixpipeParamsV220`` with NZ2ND (``CFG_ROW_MAJOR``): ``m_size`` x ``n_size`` elements out of L0C,
    whose 16-column blocks are ``src_stride`` rows apart, into GM rows ``dst_stride`` elements apart;
    ``quant_pre`` names the ``QuantMode_t`` (``NoQuant`` or ``F322F16`` / ``F322BF16``)."""

    n_size: int
    m_size: int
    src_stride: int
    dst_stride: int
    quant_pre: str = "NoQuant"
    relu_en: bool = False


@dataclass(frozen=True)
class InitConstValueParams:
    """``InitConstValueParams`` for an L1 destination: ``repeat_times`` runs of ``block_num`` 32-byte blocks,
    ``dst_gap`` blocks apart, set to ``init_value``."""

    repeat_times: int
    block_num: int
    dst_gap: int
    init_value: float = 0.0


@dataclass(frozen=True)
class DataCopyExtParams:
    """``DataCopyExtParams`` of ``DataCopyPad``: ``block_count`` blocks of ``block_len`` bytes; the strides are
    the gaps between consecutive blocks, in bytes on the GM side and in 32-byte blocks on the UB side (a UB
    block occupies ``block_len`` rounded up to 32 bytes)."""

    block_count: int | PerCore | Offset | Pick
    block_len: int | Offset | Pick
    src_stride: int | Offset | Pick
    dst_stride: int | Offset | Pick


VEC_BINARY = ("Add", "Mul", "Max")
VEC_SCALAR = ("Adds", "Muls", "Maxs")
VEC_UNARY = ("Relu",)
"""Vector intrinsics of :class:`VecOp` (``Duplicate`` takes only the scalar)."""


# ---- statements ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class InitConstValue:
    """``InitConstValue(dst[dst_offset], params)``.  Modelled on pipe MTE2, the pipe of the L1 DMA it precedes
    (the L1 fill instruction behind it is issued on the cube's MTE2 queue)."""

    dst: str
    dst_offset: int | Offset
    params: InitConstValueParams
    label: str = ""
    pipe = "MTE2"

    @property
    def reads(self) -> tuple[str, ...]:
        return ()

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.dst,)


@dataclass(frozen=True)
class _Move:
    """A statement that reads its ``src`` buffer and writes its ``dst`` buffer: ``dst[dst_offset] <-
    src[src_offset]`` moved as ``params`` (each subclass narrows the parameter struct's type and names its
    pipe; the fields keep this order, so positional construction is unchanged)."""

    dst: str
    dst_offset: int | Offset
    src: str
    src_offset: int | Offset
    params: object
    label: str = ""

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.src,)

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.dst,)


@dataclass(frozen=True)
class CopyGmToL1(_Move):
    """``DataCopy(dst[dst_offset], src[src_offset], Nd2NzParams)``: the GM -> L1 ND2NZ DMA."""

    params: Nd2NzParams
    pipe = "MTE2"


@dataclass(frozen=True)
class LoadData(_Move):
    """``LoadData(dst[dst_offset], src[src_offset], LoadData2DParams)``: L1 -> L0A / L0B."""

    params: LoadData2DParams
    pipe = "MTE1"


@dataclass(frozen=True)
class Mmad:
    """``Mmad(c, a, b, MmadParams)``.  ``transpose_a`` / ``transpose_b`` are model-only facts (not printed):
    the L0 image holds ``A^T`` (``B^T``), i.e. the logical view of the buffer is ``k x m`` (``n x k``)."""

    c: str
    a: str
    b: str
    params: MmadParams
    transpose_a: bool = False
    transpose_b: bool = False
    label: str = ""
    pipe = "M"

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.a, self.b) if self.params.cmatrix_init_val else (self.a, self.b, self.c)

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.c,)


@dataclass(frozen=True)
class Fixpipe(_Move):
    """``Fixpipe<dst, src, CFG_ROW_MAJOR>(dst[dst_offset], src[src_offset], FixpipeParamsV220)``:
    L0C -> GM with NZ2ND."""

    params: FixpipeParamsV220
    pipe = "FIX"


@dataclass(frozen=True)
class CopyGmToUb(_Move):
    """``DataCopyPad(dst[dst_offset], src[src_offset], DataCopyExtParams, {false, 0, 0, 0})``: GM -> UB."""

    params: DataCopyExtParams
    pipe = "MTE2"


@dataclass(frozen=True)
class CopyUbToGm(_Move):
    """``DataCopyPad(dst[dst_offset], src[src_offset], DataCopyExtParams)``: UB -> GM (a tail tile's rows and
    columns only; a core with no valid rows skips it)."""

    params: DataCopyExtParams
    pipe = "MTE3"


@dataclass(frozen=True)
class VecOp:
    """A vector intrinsic over ``count`` contiguous UB elements: ``op(dst, src0[, src1], count)`` (binary,
    :data:`VEC_BINARY`), ``op(dst, src0, scalar, count)`` (:data:`VEC_SCALAR`), ``Relu(dst, src0, count)`` or
    ``Duplicate(dst, scalar, count)``, or ``Cast(dst, src0, RoundMode::CAST_RINT, count)`` (to the type of
    ``dst``, rounding to nearest even); ``srcs`` are ``(buffer, offset)`` pairs."""

    op: str
    dst: str
    dst_offset: int | Offset
    srcs: tuple[tuple[str, int | Offset], ...]
    count: int
    scalar: float = 0.0
    label: str = ""
    pipe = "V"

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b for b, _ in self.srcs))

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.dst,)


@dataclass(frozen=True)
class CrossCoreSetFlag:
    """``CrossCoreSetFlag<2, PIPE_pipe>(flag_id)``: issued on ``pipe`` of its core, it signals the other side
    (the cube signals both vector cores; the cube's wait needs both vector cores' signals)."""

    flag_id: int
    pipe_name: str


@dataclass(frozen=True)
class CrossCoreWaitFlag:
    """``CrossCoreWaitFlag(flag_id)``: the core waits for the other side's :class:`CrossCoreSetFlag`."""

    flag_id: int


@dataclass(frozen=True)
class _Flag:
    """A ``HardEvent::SRC_DST`` flag statement between pipe ``src`` and pipe ``dst``."""

    src: str
    dst: str
    event_id: int = 0

    @property
    def event(self) -> str:
        """The ``HardEvent`` name.

        >>> SetFlag("MTE2", "MTE1").event
        'MTE2_MTE1'
        """
        return f"{self.src}_{self.dst}"


@dataclass(frozen=True)
class SetFlag(_Flag):
    """``SetFlag<HardEvent::SRC_DST>(event_id)``: pipe ``src`` signals everything issued on it so far."""


@dataclass(frozen=True)
class WaitFlag(_Flag):
    """``WaitFlag<HardEvent::SRC_DST>(event_id)``: pipe ``dst`` waits for the matching :class:`SetFlag`."""


@dataclass(frozen=True)
class SetAtomic:
    """``SetAtomicAdd<dtype>()`` (``mode="add"``: later GM stores accumulate) or ``SetAtomicNone()``."""

    mode: str
    dtype: str = "float32"


@dataclass(frozen=True)
class PipeBarrier:
    """``PipeBarrier<PIPE_ALL>()``: every pipe drains."""

    pipe_name: str = "PIPE_ALL"


@dataclass(frozen=True)
class Comment:
    text: str


@dataclass(frozen=True)
class For:
    """``for (var = 0; var < extent; ++var) body``; offsets in the body may be :class:`Offset` s of ``var``."""

    var: str
    extent: int
    body: tuple


@dataclass(frozen=True)
class Guard:
    """``if (cond) body``: statements only some tile classes run (a tail tile's zero fill).  ``when`` is a
    disjunction of conjunctions of ``(var, full, tail)``: ``var < full`` when ``tail``, else ``var == full``.

    >>> Guard(((("mActual", 64, True),),), ()).holds({"mActual": 36})
    True
    """

    when: tuple[tuple[tuple[str, int, bool], ...], ...]
    body: tuple

    def holds(self, env: dict[str, int]) -> bool:
        return any(all((env[v] < full) == tail for v, full, tail in conj) for conj in self.when)


Stmt = (InitConstValue | CopyGmToL1 | LoadData | Mmad | Fixpipe | SetFlag | WaitFlag | SetAtomic | PipeBarrier
        | Comment | For | CopyGmToUb | CopyUbToGm | VecOp | CrossCoreSetFlag | CrossCoreWaitFlag | Guard | TileLoop)
WORK = (InitConstValue, CopyGmToL1, LoadData, Mmad, Fixpipe, CopyGmToUb, CopyUbToGm, VecOp)
"""Statements that move or compute data (the others order the pipes or annotate)."""


@dataclass(frozen=True)
class Kernel:
    """One kernel: ``params`` (GM tensors in argument order), ``buffers``, the cube ``body`` and the
    ``vector`` body of each vector core (empty for a cube-only kernel)."""

    name: str
    params: tuple[GlobalParam, ...]
    buffers: tuple[LocalBuffer, ...]
    body: tuple[Stmt, ...]
    vector: tuple[Stmt, ...] = ()
    block_dim: int = 1
    """How many AI cores the launch uses (``GetBlockNum()``); a GM workspace holds one slice per core."""

    def buffer(self, name: str) -> LocalBuffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def param(self, name: str) -> GlobalParam:
        for g in self.params:
            if g.name == name:
                return g
        raise KeyError(name)

    def count(self, kind: type) -> int:
        """How many statements of ``kind`` the two bodies have (loop bodies counted once)."""
        return sum(isinstance(s, kind) for s in flatten(self.body) + flatten(self.vector))

    @property
    def size(self) -> int:
        """Statements printed (loops and their bodies counted once): what tile-loop rolling keeps small."""
        return len(flatten(self.body)) + len(flatten(self.vector))


def flatten(body) -> list:
    """Every statement of ``body``, loop bodies inlined once (the loops themselves included).

    >>> [type(s).__name__ for s in flatten((For("i", 4, (Comment("x"),)), Comment("y")))]
    ['For', 'Comment', 'Comment']
    """
    out = []
    for s in body:
        out.append(s)
        if isinstance(s, (For, Guard, TileLoop)):
            out += flatten(s.body)
    return out
