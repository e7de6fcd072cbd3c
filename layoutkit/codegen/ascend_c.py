"""Ascend C printer for :mod:`.ascend_ir` kernels.

One ``extern "C" __global__ __aicore__`` function per kernel: a ``GlobalTensor`` per GM parameter, a ``TBuf``
(``TPosition`` A1 / B1 / A2 / B2 / CO1) and its ``LocalTensor`` per on-chip buffer, then the statements
in order, each parameter struct filled field by field (``Nd2NzParams``, ``LoadData2DParams``, ``MmadParams``,
``FixpipeParamsV220``, ``InitConstValueParams``), and ``SetFlag`` / ``WaitFlag`` on the ``HardEvent`` of the
two pipes they order.  The kernel is cube-only, so the vector cores of a mixed launch return at once.

>>> from layoutkit.codegen import ascend_ir as ir
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

from ..errors import UnsupportedError
from . import ascend_ir as ir

CTYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float", "int8": "int8_t", "int32": "int32_t",
          "uint8": "uint8_t"}
ELEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "int32": 4, "uint8": 1}
WIDTH = 116


def ctype(dtype: str) -> str:
    """The Ascend C element type of a layoutkit dtype."""
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


def _offset(x: int | ir.Offset) -> str:
    """An element offset: a constant or ``base + var * stride``."""
    if isinstance(x, ir.Offset):
        return f"{x.base} + {x.var} * {x.stride}" if x.base else f"{x.var} * {x.stride}"
    return str(x)


def _value(v: object) -> str:
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


def _stmt(s, k: ir.Kernel) -> list[str]:
    if isinstance(s, ir.Comment):
        return [f"// {s.text}"]
    if isinstance(s, ir.For):
        inner = [f"    {x}" for t in s.body for x in _stmt(t, k)]
        return [f"for (uint32_t {s.var} = 0; {s.var} < {s.extent}; ++{s.var}) {{  // K steps"] + inner + ["}"]
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


def print_kernel(kernel: ir.Kernel) -> str:
    """Ascend C source of one kernel (a whole translation unit)."""
    args = ", ".join(f"GM_ADDR {ident(g.name)}" for g in kernel.params)
    out = ["// Generated by layoutkit from a solved Ascend program: the cube pipeline GM -> L1 -> L0A/L0B -> Mmad",
           "// -> L0C -> GM, unrolled tile by tile, with the fractal parameters of the inferred layouts.",
           '#include "kernel_operator.h"', "",
           f'extern "C" __global__ __aicore__ void {ident(kernel.name)}({args})', "{"]
    body = ["if ASCEND_IS_AIV {", "    return;  // cube-only kernel: the vector cores of a mixed launch idle", "}",
            "AscendC::TPipe pipe;"]
    for g in kernel.params:
        t = ctype(g.dtype)
        body += [f"AscendC::GlobalTensor<{t}> {ident(g.name)}_gm;",
                 f"{ident(g.name)}_gm.SetGlobalBuffer((__gm__ {t} *){ident(g.name)});"]
    for b in kernel.buffers:
        t = ctype(b.dtype)
        body += [f"AscendC::TBuf<AscendC::TPosition::{b.position}> {ident(b.name)}_buf;",
                 f"pipe.InitBuffer({ident(b.name)}_buf, {b.size * ELEM_BYTES[b.dtype]});",
                 f"AscendC::LocalTensor<{t}> {ident(b.name)} = {ident(b.name)}_buf.Get<{t}>();"]
    body.append("")
    for s in kernel.body:
        body += _stmt(s, kernel)
    out += [f"    {x}" if x else "" for x in body] + ["}", ""]
    return "\n".join(out)


def print_module(kernels: list[ir.Kernel]) -> str:
    """Several kernels in one translation unit (one include)."""
    texts = [print_kernel(k) for k in kernels]
    head = '#include "kernel_operator.h"\n'
    return texts[0] + "".join("\n" + t.split(head, 1)[1] for t in texts[1:])
