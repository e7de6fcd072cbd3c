"""Ascend C printer for :mod:`.ir` kernels.

One ``extern "C" __global__ __aicore__`` function per kernel: a ``GlobalTensor`` per GM parameter, a ``TBuf``
(``TPosition`` A1 / B1 / A2 / B2 / CO1) and its ``LocalTensor`` per on-chip buffer, then the statements
in order, each parameter struct filled field by field (``Nd2NzParams``, ``LoadData2DParams``, ``MmadParams``,
``FixpipeParamsV220``, ``InitConstValueParams``, ``DataCopyExtParams``), and ``SetFlag`` / ``WaitFlag`` on the
``HardEvent`` of the two pipes they order.  A cube-only kernel lets the vector cores of a mixed launch return
at once; a kernel with a vector body is ``KERNEL_TYPE_MIX_AIC_1_2``: the cube statements under
``ASCEND_IS_AIC``, the vector ones (UB buffers, ``sub = GetSubBlockIdx()``) under ``ASCEND_IS_AIV``, meeting
through ``CrossCoreSetFlag<2, PIPE_...>`` / ``CrossCoreWaitFlag``.

>>> from layoutkit.backends.ascend import ir
>>> from layoutkit.targets.ascend import fractal_info, make_ascend_nz_layout
>>> info = fractal_info(make_ascend_nz_layout((16, 16), "float16"))
>>> k = ir.Kernel("k", (ir.GlobalParam("A", "float16", (16, 16)),), (ir.LocalBuffer("a1", "float16", "A1", 256, info),),
...               (ir.CopyGmToL1("a1", 0, "A", 0, ir.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0), "copy#0"),))
>>> src = print_kernel(k)
>>> "AscendC::DataCopy(a1[0], A_gm[0], p);" in src, "p.dstNzC0Stride = 16;" in src
(True, True)
"""

from __future__ import annotations

import re

from ...errors import UnsupportedError
from . import ir

CTYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float", "int8": "int8_t", "int32": "int32_t",
          "uint8": "uint8_t"}
ELEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "int32": 4, "uint8": 1}
WIDTH = 116


def ctype(dtype: str) -> str:
    """The Ascend C element type of a layoutkit dtype (float16, bfloat16, float32 only).

    >>> ctype("float16"), ctype("bfloat16")
    ('half', 'bfloat16_t')
    """
    if dtype not in CTYPES:
        raise UnsupportedError(f"ascend_c: no Ascend C type for {dtype}; expected one of {sorted(CTYPES)}")
    return CTYPES[dtype]


def ident(name: str) -> str:
    """A C identifier for a buffer name.

    >>> ident("C_l0"), ident("a.b"), ident("0x")
    ('C_l0', 'a_b', '_0x')
    """
    out = re.sub(r"\W", "_", name)
    return "_" + out if out[:1].isdigit() else out


def _offset(x: int | ir.Offset | ir.Pick) -> str:
    """An element offset or struct field: a constant, ``base + var * stride + ...`` (innermost loop first) or
    a tail pick ``(var < full ? tail : value)``.

    >>> _offset(ir.Offset(8, 2, "kt0", (("ti", 64),))), _offset(3), _offset(ir.Offset(288, -4, "nActual"))
    ('8 + kt0 * 2 + ti * 64', '3', '288 - nActual * 4')
    >>> _offset(ir.Pick("nActual", 64, 0, 7)), _offset(ir.Offset(0, 1, "mActual"))
    ('(nActual < 64 ? 7 : 0)', 'mActual')
    """
    if isinstance(x, ir.Pick):
        return f"({x.var} < {x.full} ? {_offset(x.tail)} : {_offset(x.value)})"
    if isinstance(x, ir.Offset):
        out = str(x.base) if x.base else ""
        for v, s in ((x.var, x.stride),) + x.terms:
            term = v if abs(s) == 1 else f"{v} * {abs(s)}"
            out = (f"{out} - {term}" if out else f"0 - {term}") if s < 0 else (f"{out} + {term}" if out else term)
        return out
    return str(x)


def _value(v: object) -> str:
    if isinstance(v, (ir.Offset, ir.Pick)):
        return _offset(v)
    if isinstance(v, ir.PerCore):
        return f"(sub == 0 ? {v.values[0]} : {v.values[1]})"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(int(v)) if v == int(v) else repr(v)
    return str(v)


def _struct(ctype_name: str, params, var: str = "p") -> list[str]:
    """``Struct p;`` then the field assignments, wrapped."""
    lines = [f"{ctype_name} {var};"]
    line = ""
    for field, v in ir.struct_fields(params):
        text = (f"{var}.{field} = AscendC::QuantMode_t::{v};" if field == "quantPre"
                else f"{var}.{field} = {_value(v)};")
        if line and len(line) + 1 + len(text) > WIDTH - 8:
            lines.append(line)
            line = text
        else:
            line = f"{line} {text}" if line else text
    return lines + ([line] if line else [])


def _block(comment: str, body: list[str]) -> list[str]:
    return [f"{{  // {comment}"] + [f"    {x}" for x in body] + ["}"]


def _condition(g: ir.Guard) -> str:
    """The C condition of a :class:`~.ir.Guard`.

    >>> _condition(ir.Guard(((("mActual", 64, True),), (("nActual", 32, True),)), ()))
    'mActual < 64 || nActual < 32'
    """
    return " || ".join(" && ".join(f"{v} < {full}" if tail else f"{v} == {full}" for v, full, tail in conj)
                       for conj in g.when)


def _tile_loop(s: ir.TileLoop, k: ir.Kernel) -> list[str]:
    """The loop over this core's output tiles: task ``t`` -> tile ``(mi, ni)`` by CATLASS's identity block
    swizzle, then the tile's origin extents."""
    inner = [x for t in s.body for x in _stmt(t, k)]
    text = "\n".join(inner)
    off, mt, nt = s.swizzle_offset, s.m_tiles, s.n_tiles
    rows, cols, a, b = (mt, nt, "mi", "ni") if s.swizzle_direction == 0 else (nt, mt, "ni", "mi")
    bands = -(-rows // off)
    head = [f"for (uint32_t t = core; t < {s.tiles}; t += AscendC::GetBlockNum()) {{  // this core's output tiles",
            f"    // block swizzle <{off}, {s.swizzle_direction}>: bands of {off} tile "
            f"{'rows' if s.swizzle_direction == 0 else 'columns'}, every other band walked backwards",
            f"    uint32_t band = t / {off * cols};",
            f"    uint32_t inBand = t % {off * cols};",
            f"    uint32_t width = band == {bands - 1} ? {rows} - {off} * band : {off};",
            f"    uint32_t {a} = band * {off} + inBand % width;",
            f"    uint32_t {b} = inBand / width;",
            f"    if (band % 2 == 1) {{ {b} = {cols - 1} - {b}; }}",
            "    // the tile's origin shape (TLA get_tile_layout): what is left of the result, at most one tile"]
    uses = {v for v in ("mActual", "nActual", "subM") if re.search(rf"\b{v}\b", text)}
    uses |= {"mActual"} if "subM" in uses else set()
    for v, full, pos, var in (("mActual", s.m, s.bm, "mi"), ("nActual", s.n, s.bn, "ni")):
        if v in uses:
            head.append(f"    uint32_t {v} = {full} - {var} * {pos} < {pos} ? {full} - {var} * {pos} : {pos};")
    if "subM" in uses:
        h = s.sub_rows
        head.append(f"    uint32_t subM = mActual > sub * {h} ? (mActual - sub * {h} < {h} ? mActual - sub * {h} : "
                    f"{h}) : 0;  // this vector core's rows of the tile")
    for v, extent in (("mi", "mActual"), ("ni", "nActual")):
        if not re.search(rf"\b{v}\b", text) and extent not in uses:
            head.append(f"    (void){v};")
    return head + [f"    {x}" for x in inner] + ["}"]


def _stmt(s, k: ir.Kernel) -> list[str]:
    if isinstance(s, ir.TileLoop):
        return _tile_loop(s, k)
    if isinstance(s, ir.Guard):
        inner = [f"    {x}" for t in s.body for x in _stmt(t, k)]
        return [f"if ({_condition(s)}) {{  // only tail tiles"] + inner + ["}"]
    if isinstance(s, ir.Comment):
        return [f"// {s.text}"]
    if isinstance(s, ir.For):
        inner = [f"    {x}" for t in s.body for x in _stmt(t, k)]
        what = {"kt0": "K steps", "r": "rows", "fr": "fractal rows"}.get(s.var, "tiles")
        return [f"for (uint32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{  // {what}"] + inner + ["}"]
    if isinstance(s, ir.CrossCoreSetFlag):
        return [f"AscendC::CrossCoreSetFlag<0x2, PIPE_{s.pipe_name}>({s.flag_id});"]
    if isinstance(s, ir.CrossCoreWaitFlag):
        return [f"AscendC::CrossCoreWaitFlag({s.flag_id});"]
    if isinstance(s, ir.VecOp):
        dst = f"{ident(s.dst)}[{_offset(s.dst_offset)}]"
        srcs = [f"{ident(b)}[{_offset(o)}]" for b, o in s.srcs]
        t = ctype(k.buffer(s.dst).dtype)
        scalar = [f"({t}){_value(float(s.scalar))}"] if s.op in ir.VEC_SCALAR or s.op == "Duplicate" else []
        scalar = ["AscendC::RoundMode::CAST_RINT"] if s.op == "Cast" else scalar
        return [f"AscendC::{s.op}({', '.join([dst] + srcs + scalar + [str(s.count)])});  // {s.label}"]
    if isinstance(s, (ir.CopyGmToUb, ir.CopyUbToGm)):
        body = _struct("AscendC::DataCopyExtParams", s.params)
        if isinstance(s, ir.CopyGmToUb):
            t = ctype(k.buffer(s.dst).dtype)
            call = (f"AscendC::DataCopyPad({ident(s.dst)}[{_offset(s.dst_offset)}], {ident(s.src)}_gm"
                    f"[{_offset(s.src_offset)}], p, AscendC::DataCopyPadExtParams<{t}>{{false, 0, 0, 0}});")
            return _block(f"{s.label}: GM -> UB", body + [call])
        call = (f"AscendC::DataCopyPad({ident(s.dst)}_gm[{_offset(s.dst_offset)}], "
                f"{ident(s.src)}[{_offset(s.src_offset)}], p);")
        count = s.params.block_count
        if (isinstance(count, ir.PerCore) and 0 in count.values) or isinstance(count, (ir.Offset, ir.Pick)):
            call = f"if (p.blockCount > 0) {call}"  # a tail tile may leave one core no rows
        return _block(f"{s.label}: UB -> GM", body + [call])
    if isinstance(s, ir.SetFlag):
        return [f"AscendC::SetFlag<AscendC::HardEvent::{s.event}>(EVENT_ID{s.event_id});"]
    if isinstance(s, ir.WaitFlag):
        return [f"AscendC::WaitFlag<AscendC::HardEvent::{s.event}>(EVENT_ID{s.event_id});"]
    if isinstance(s, ir.SetAtomic):
        return [f"AscendC::SetAtomicAdd<{ctype(s.dtype)}>();" if s.mode == "add" else "AscendC::SetAtomicNone();"]
    if isinstance(s, ir.PipeBarrier):
        return [f"AscendC::PipeBarrier<{s.pipe_name}>();"]
    if isinstance(s, ir.InitConstValue):
        t = ctype(k.buffer(s.dst).dtype)
        body = _struct(f"AscendC::InitConstValueParams<{t}>", s.params)
        return _block(f"{s.label}: zero the tail tile", body + [f"AscendC::InitConstValue({ident(s.dst)}"
                                                                 f"[{_offset(s.dst_offset)}], p);"])
    if isinstance(s, ir.CopyGmToL1):
        body = _struct("AscendC::Nd2NzParams", s.params)
        dst, src = f"{ident(s.dst)}[{_offset(s.dst_offset)}]", f"{ident(s.src)}_gm[{_offset(s.src_offset)}]"
        return _block(f"{s.label}: GM -> L1, ND2NZ", body + [f"AscendC::DataCopy({dst}, {src}, p);"])
    if isinstance(s, ir.LoadData):
        body = _struct("AscendC::LoadData2DParams", s.params)
        return _block(f"{s.label}: L1 -> {k.buffer(s.dst).position}", body + [
            f"AscendC::LoadData({ident(s.dst)}[{_offset(s.dst_offset)}], {ident(s.src)}[{_offset(s.src_offset)}], p);"])
    if isinstance(s, ir.Mmad):
        body = _struct("AscendC::MmadParams", s.params)
        return _block(f"{s.label}: cube MAD", body + [
            f"AscendC::Mmad({ident(s.c)}, {ident(s.a)}, {ident(s.b)}, p);"])
    if isinstance(s, ir.Fixpipe):
        body = _struct("AscendC::FixpipeParamsV220", s.params)
        dt, st = ctype(k.param(s.dst).dtype), ctype(k.buffer(s.src).dtype)
        return _block(f"{s.label}: L0C -> GM, NZ2ND", body + [
            f"AscendC::Fixpipe<{dt}, {st}, AscendC::CFG_ROW_MAJOR>({ident(s.dst)}_gm[{_offset(s.dst_offset)}], "
            f"{ident(s.src)}[{_offset(s.src_offset)}], p);"])
    raise UnsupportedError(f"ascend_c: no printer for {type(s).__name__}")


def _core_index(body, line: str) -> list[str]:
    return [line] if any(isinstance(s, ir.TileLoop) for s in body) else []


def _declare(b: ir.LocalBuffer) -> list[str]:
    t = ctype(b.dtype)
    return [f"AscendC::TBuf<AscendC::TPosition::{b.position}> {ident(b.name)}_buf;",
            f"pipe.InitBuffer({ident(b.name)}_buf, {b.size * ELEM_BYTES[b.dtype]});",
            f"AscendC::LocalTensor<{t}> {ident(b.name)} = {ident(b.name)}_buf.Get<{t}>();"]


def print_kernel(kernel: ir.Kernel) -> str:
    """Ascend C source of one kernel (a whole translation unit: ``#include "kernel_operator.h"`` and an
    ``extern "C" __global__ __aicore__`` function taking one ``GM_ADDR`` per GM parameter, in order).

    >>> k = ir.Kernel("k", (ir.GlobalParam("C", "float32", (16, 16)),), (), ())
    >>> 'extern "C" __global__ __aicore__ void k(GM_ADDR C' in print_kernel(k)
    True
    """
    args = ", ".join(f"GM_ADDR {ident(g.name)}" for g in kernel.params)
    mixed = bool(kernel.vector)
    out = ["// Generated by layoutkit from a solved Ascend program: the cube pipeline GM -> L1 -> L0A/L0B -> Mmad",
           "// -> L0C -> GM" + (" with a vector epilogue (GM workspace -> UB -> GM)" if mixed else "")
           + ", with the fractal parameters of the inferred layouts.",
           '#include "kernel_operator.h"', "",
           f'extern "C" __global__ __aicore__ void {ident(kernel.name)}({args})', "{"]
    body = ["KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);"] if mixed else [
        "if ASCEND_IS_AIV {", "    return;  // cube-only kernel: the vector cores of a mixed launch idle", "}"]
    body.append("AscendC::TPipe pipe;")
    for g in kernel.params:
        t = ctype(g.dtype)
        body += [f"AscendC::GlobalTensor<{t}> {ident(g.name)}_gm;",
                 f"{ident(g.name)}_gm.SetGlobalBuffer((__gm__ {t} *){ident(g.name)});"]
    cube = [x for b in kernel.buffers if not b.is_ub for x in _declare(b)]
    cube += _core_index(kernel.body, "uint32_t core = AscendC::GetBlockIdx();  // this AI core")
    cube += [""] + [x for s in kernel.body for x in _stmt(s, kernel)]
    if not mixed:
        body += cube
    else:
        vec = ["uint32_t sub = AscendC::GetSubBlockIdx();  // which half of each tile this vector core takes"]
        vec += [x for b in kernel.buffers if b.is_ub for x in _declare(b)]
        vec += _core_index(kernel.vector, "uint32_t core = AscendC::GetBlockIdx() / AscendC::GetSubBlockNum();  "
                                          "// the cube core this vector core serves")
        vec += [""] + [x for s in kernel.vector for x in _stmt(s, kernel)]
        body += (["if ASCEND_IS_AIC {"] + [f"    {x}" if x else "" for x in cube] + ["}"]
                 + ["if ASCEND_IS_AIV {"] + [f"    {x}" if x else "" for x in vec] + ["}"])
    out += [f"    {x}" if x else "" for x in body] + ["}", ""]
    return "\n".join(out)


def print_module(kernels: list[ir.Kernel]) -> str:
    """Several kernels in one translation unit (one include).

    >>> ks = [ir.Kernel(n, (ir.GlobalParam("C", "float32", (16, 16)),), (), ()) for n in "ab"]
    >>> print_module(ks).count('#include "kernel_operator.h"')
    1
    """
    texts = [print_kernel(k) for k in kernels]
    head = '#include "kernel_operator.h"\n'
    return texts[0] + "".join("\n" + t.split(head, 1)[1] for t in texts[1:])
