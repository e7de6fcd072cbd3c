"""The Ascend passes after layout inference (``docs/reference.md#ascend-data-movement-and-passes``), each
``fn(program, layouts=None) -> (new program, PassReport)``; ``layouts`` is an
:class:`~layoutkit.infer.InferenceResult`, a ``{name: Layout}`` map, or (default) the program's
annotations.  Every new program carries the fractal layouts it was given (updated) as annotations, so the
passes chain.

* :func:`normalize_fractal_storage`: L1/L0A/L0B/L0C fractal buffers padded to whole fractals (MajorK rows
  to 16, cols to C0; MajorMN the reverse; L0C both to 16); aliases folded into their owner; the padding is
  never initialised (the report counts it).
* :func:`insert_nd2nz`: UB -> L1 copies into a MajorK (NZ) layout become ``scatter`` (UB ND -> UB compact
  NZ with a spare row) + ``post_copy`` (nBurst = cols/C0, lenBurst = rows, srcGap = 1, dstGap = full_rows -
  rows); only 16/32-bit floats.
* :func:`insert_oob_padding`: GM-facing copies clamped to ``valid = min(extent, max(src_shape - src_min,
  0), max(dst_shape - dst_min, 0))`` per paired axis; a clamped GM -> L1 copy gets explicit fills.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(target="ascend")
>>> g = p.tensor("G", (10, 8), "bfloat16")
>>> l1 = p.alloc("L1", (16, 32), "bfloat16", "l1")
>>> _ = p.copy(g[0:16, 0:32], l1)
>>> from layoutkit.targets import ascend
>>> q, rep = insert_oob_padding(p, {"L1": ascend.make_ascend_nz_layout((16, 32), "bfloat16")})
>>> rep.clamped[0]["valid"], [f["region"] for f in rep.fills]
([10, 8], [((0, 16), (16, 16)), ((10, 6), (0, 32))])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...algebra.layout import Layout
from ...errors import UnsupportedError
from ...infer.ops import Access, Buffer, Op
from ...infer.program import Program
from ...infer.validate import OpValidationError
from ...targets import ascend
from ...targets.ascend.layouts import FractalKind
from .scopes import FRACTAL_SCOPES, GM, L1, UB

ND2NZ_DTYPES = ("float16", "bfloat16", "float32")


@dataclass
class PassReport:
    """What a pass changed: ``padded`` ({buffer: (logical shape, padded shape)}), ``uninitialised``
    ({buffer: padding elements no one initialises}), ``folded`` ({alias: owner}), ``rewritten`` (copies
    replaced, with the new ops and their parameters), ``clamped`` (copies with a clamped ``valid``
    extent) and ``fills`` (fills added)."""

    name: str
    padded: dict = field(default_factory=dict)
    uninitialised: dict = field(default_factory=dict)
    folded: dict = field(default_factory=dict)
    rewritten: list = field(default_factory=list)
    clamped: list = field(default_factory=list)
    fills: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any((self.padded, self.folded, self.rewritten, self.clamped, self.fills))

    def lines(self) -> list[str]:
        out = [f"{b}: padded {lo} -> {hi} ({self.uninitialised.get(b, 0)} uninitialised)"
               for b, (lo, hi) in self.padded.items()]
        out += [f"{a}: folded into {o}" for a, o in self.folded.items()]
        out += [f"{r['op']}: rewritten as {' + '.join(r['into'])} {r['params']}" for r in self.rewritten]
        out += [f"{c['op']}: clamped {c['extents']} -> {c['valid']}" for c in self.clamped]
        out += [f"{f['op']}: fill {f['buffer']} {f['region']} = {f['value']} (for {f['for']})" for f in self.fills]
        return out

    def __str__(self) -> str:
        return "\n".join([f"{self.name}: {'no change' if not self.changed else ''}".rstrip()] + self.lines())


# ---- helpers ----------------------------------------------------------------------------------

def layouts_of(program: Program, layouts=None) -> dict[str, Layout]:
    """``{name: layout}`` from an InferenceResult, a mapping, or the program's annotations."""
    src = program.annotations if layouts is None else getattr(layouts, "layout_map", layouts)
    return {n: src[n] for n in program.buffers if n in src}


def clone(program: Program, ops: list[Op] | None = None, buffers: dict[str, Buffer] | None = None,
          annotations: dict[str, Layout] | None = None) -> Program:
    """A new program with the same target, threads, stages and regions (ops and buffers replaceable)."""
    q = Program(program.threads, program.target)
    q.buffers = dict(program.buffers if buffers is None else buffers)
    q.ops = list(program.ops if ops is None else ops)
    q.stages = dict(program.stages)
    q.regions = {k: list(v) for k, v in program.regions.items()}
    q.annotations = dict(program.annotations if annotations is None else annotations)
    q.next_uid = program.next_uid
    return q


def padded_extents(layout: Layout) -> tuple[int, int]:
    """(rows, cols) of the whole-fractal view of a MajorK, MajorMN or L0C layout.

    >>> padded_extents(ascend.make_ascend_major_mn_layout((20, 20), "float32"))
    (24, 32)
    """
    info = ascend.fractal_info(layout)
    if info.kind is FractalKind.MAJOR_MN:
        return info.outer0 * info.c0, info.outer1 * info.row_frac
    if info.kind in (FractalKind.MAJOR_K, FractalKind.L0C):
        return info.outer1 * info.row_frac, info.outer0 * info.c0
    raise UnsupportedError(f"padded_extents: expected a MajorK, MajorMN or L0C layout; found {info.kind.name}")


def _remake(layout: Layout, shape: tuple[int, ...], dtype: str) -> Layout:
    kind = ascend.fractal_info(layout).kind
    if kind is FractalKind.MAJOR_K:
        return ascend.make_ascend_major_k_layout(shape, dtype)
    if kind is FractalKind.MAJOR_MN:
        return ascend.make_ascend_major_mn_layout(shape, dtype)
    return ascend.make_ascend_l0c_layout(shape)


def _rename(op: Op, names: dict[str, str]) -> Op:
    if not any(b in names for b in op.buffers):
        return op
    args = {k: (names.get(v, v) if k in ("A", "B", "C", "src", "dst") and isinstance(v, str) else v)
            for k, v in op.args.items()}
    acc = tuple(Access(names.get(a.buffer, a.buffer), a.indices, a.is_write) for a in op.accesses)
    return replace(op, args=args, accesses=acc, buffers=tuple(dict.fromkeys(names.get(b, b) for b in op.buffers)))


def _mnk(program: Program, op: Op) -> list[int]:
    a = op.args
    A, B = program.buffers[a["A"]].shape, program.buffers[a["B"]].shape
    M, K = (A[-1], A[-2]) if a["transpose_A"] else (A[-2], A[-1])
    N = B[-2] if a["transpose_B"] else B[-1]
    return [M, N, K]


# ---- NormalizeAscendFractalStorage ------------------------------------------------------------

def normalize_fractal_storage(program: Program, layouts=None) -> tuple[Program, PassReport]:
    """Pad fractal buffers to whole fractals and fold aliases into their owner.

    >>> p = Program(target="ascend")
    >>> a = p.alloc("a", (20, 20), "float16", "l1")
    >>> q, rep = normalize_fractal_storage(p, {"a": ascend.make_ascend_nz_layout((20, 20), "float16")})
    >>> q.buffers["a"].shape, rep.uninitialised["a"]
    ((32, 32), 624)
    """
    lay = layouts_of(program, layouts)
    rep = PassReport("normalize_fractal_storage")
    names: dict[str, str] = {}
    buffers = dict(program.buffers)
    for name, buf in program.buffers.items():
        if buf.scope in FRACTAL_SCOPES and buf.alias_of is not None:
            owner = program.buffers[buf.alias_of]
            if owner.shape != buf.shape or owner.dtype != buf.dtype:
                raise UnsupportedError(f"normalize_fractal_storage: alias {name} {buf.shape} {buf.dtype} of "
                                       f"{owner.name} {owner.shape} {owner.dtype} is a reshaping view; only "
                                       f"same-shape aliases fold")
            names[name] = owner.name
            rep.folded[name] = owner.name
            del buffers[name]
            lay.pop(name, None)
    new_lay = dict(lay)
    for name, buf in list(buffers.items()):
        if buf.scope not in FRACTAL_SCOPES or name not in lay:
            continue
        layout = lay[name]
        if getattr(layout, "fractal", None) is None or ascend.fractal_info(layout).kind not in (
                FractalKind.MAJOR_K, FractalKind.MAJOR_MN, FractalKind.L0C):
            continue
        full = program.shape_of(name)
        pr, pc = padded_extents(layout)
        if (pr, pc) == tuple(full[-2:]):
            continue
        new_full = full[:-2] + (pr, pc)
        buffers[name] = replace(buf, shape=buf.shape[:-2] + (pr, pc))
        new_lay[name] = _remake(layout, new_full, buf.dtype)
        rep.padded[name] = (buf.shape, buffers[name].shape)
        rep.uninitialised[name] = math.prod(new_full) - math.prod(full)
    ops = []
    for op in program.ops:
        if op.kind == "gemm" and "mnk" not in op.args:
            op = replace(op, args={**op.args, "mnk": _mnk(program, op)})
        ops.append(_rename(op, names))
    q = clone(program, ops, buffers, {**program.annotations, **new_lay})
    q.regions = {k: [_rename(o, names) for o in v] for k, v in program.regions.items()}
    return q, rep


# ---- InsertNd2Nz ----------------------------------------------------------------------------------

def insert_nd2nz(program: Program, layouts=None) -> tuple[Program, PassReport]:
    """Rewrite UB -> L1 copies into a MajorK layout as ``scatter`` + ``post_copy`` (see the module doc).

    >>> p = Program(target="ascend")
    >>> u = p.alloc("u", (10, 32), "float16", "ub"); l1 = p.alloc("l1", (16, 32), "float16", "l1")
    >>> _ = p.copy(u, l1[0:10, 0:32])
    >>> q, rep = insert_nd2nz(p, {"l1": ascend.make_ascend_nz_layout((16, 32), "float16")})
    >>> rep.rewritten[0]["params"]["post_copy"]
    {'n_burst': 2, 'len_burst': 10, 'src_gap': 1, 'dst_gap': 6, 'dst_offset': 0}
    """
    lay = layouts_of(program, layouts)
    rep = PassReport("insert_nd2nz")
    q = clone(program, [], annotations={**program.annotations, **lay})
    for op in program.ops:
        a = op.args
        if (op.kind != "copy" or program.buffers[a["src"]].scope != UB
                or program.buffers[a["dst"]].scope != L1 or a["dst"] not in lay
                or getattr(lay[a["dst"]], "fractal", None) is None
                or ascend.fractal_info(lay[a["dst"]]).kind is not FractalKind.MAJOR_K):
            q.ops.append(op)
            continue
        src, dst = program.buffers[a["src"]], program.buffers[a["dst"]]
        for b in (src, dst):
            if b.dtype not in ND2NZ_DTYPES:
                raise OpValidationError(f"{op.name}: insert_nd2nz supports only 16/32-bit floats {ND2NZ_DTYPES}; "
                                        f"{b.name} is {b.dtype} (add an nd2nz specialisation for it)", op.name, b.name)
        if src.dtype != dst.dtype:
            raise OpValidationError(f"{op.name}: insert_nd2nz cannot cast {src.dtype} -> {dst.dtype}", op.name,
                                    dst.name)
        ds, de = a["dst_region"]
        if len(de) != 2 or len(program.shape_of(dst.name)) != 2:
            raise UnsupportedError(f"{op.name}: insert_nd2nz handles 2-D UB -> L1 copies; found {dst.name} "
                                   f"{program.shape_of(dst.name)}")
        c0 = ascend.c0(dst.dtype)
        rows, cols = de
        if cols % c0 or ds[1] % c0:
            raise OpValidationError(f"{op.name}: insert_nd2nz needs cols and the column start to be multiples of "
                                    f"C0 = {c0}; found cols {cols} at {ds[1]}", op.name, dst.name)
        full_rows = padded_extents(lay[dst.name])[0]
        scratch = _fresh(q, f"{dst.name}_nz_scratch")
        size = (cols // c0) * (rows + 1) * c0
        q.buffers[scratch] = Buffer(scratch, (size,), src.dtype, UB)
        sc = Op("scatter", q.next_uid, {"src": src.name, "dst": scratch, "src_region": a["src_region"], "rows": rows,
                                    "cols": cols, "c0": c0}, buffers=(src.name, scratch))
        params = {"n_burst": cols // c0, "len_burst": rows, "src_gap": 1, "dst_gap": full_rows - rows,
                  "dst_offset": (ds[1] // c0) * full_rows * c0 + ds[0] * c0}
        pc = Op("post_copy", q.next_uid + 1, {"src": scratch, "dst": dst.name, "dst_region": a["dst_region"],
                                          "full_rows": full_rows, **params}, buffers=(scratch, dst.name))
        q.next_uid += 2
        q.ops += [sc, pc]
        rep.rewritten.append({"op": op.name, "into": [sc.name, pc.name],
                              "params": {"scatter": {"rows": rows, "cols": cols, "c0": c0, "scratch": size},
                                         "post_copy": params}})
    return q, rep


def _fresh(program: Program, base: str) -> str:
    name, k = base, 1
    while name in program.buffers:
        name, k = f"{base}_{k}", k + 1
    return name


# ---- AscendInsertOOBPadding -------------------------------------------------------------------

def _pairs(region) -> list[int]:
    return [k for k, e in enumerate(region[1]) if e != 1]


def insert_oob_padding(program: Program, layouts=None, pad_value: float = 0.0) -> tuple[Program, PassReport]:
    """Clamp GM-facing copies (``args["valid"]``: one extent per paired axis) and add the fills of clamped
    GM -> L1 copies right after them (regions in the L1 buffer's coordinates, clipped to it)."""
    lay = layouts_of(program, layouts)
    rep = PassReport("insert_oob_padding")
    q = clone(program, [], annotations={**program.annotations, **lay})
    for op in program.ops:
        a = op.args
        if op.kind not in ("copy", "dual_copy") or GM not in (program.buffers[a["src"]].scope,
                                                                program.buffers[a["dst"]].scope):
            q.ops.append(op)
            continue
        src, dst = program.buffers[a["src"]], program.buffers[a["dst"]]
        sr, dr = a["src_region"], a["dst_region"]
        sk, dk = _pairs(sr), _pairs(dr)
        sshape, dshape = program.shape_of(src.name), program.shape_of(dst.name)
        if op.kind == "dual_copy":  # the per-core UB side is half; clamp against the full GM side
            gm_is_src = src.scope == GM
            ext = [(sr if gm_is_src else dr)[1][k] for k in (sk if gm_is_src else dk)]
            gk, gr, gs = (sk, sr, sshape) if gm_is_src else (dk, dr, dshape)
            valid = [ascend.clamp_valid(e, gs[k], gr[0][k], e, 0) for e, k in zip(ext, gk)]
        else:
            ext = [sr[1][k] for k in sk]
            valid = [ascend.clamp_valid(e, sshape[i], sr[0][i], dshape[j], dr[0][j])
                     for e, i, j in zip(ext, sk, dk)]
        if valid == ext:
            q.ops.append(op)
            continue
        new = replace(op, args={**a, "valid": valid})
        q.ops.append(new)
        rep.clamped.append({"op": op.name, "extents": ext, "valid": valid})
        if src.scope == GM and dst.scope == L1 and op.kind == "copy":
            if dst.name not in lay:
                raise OpValidationError(f"{op.name}: the L1 buffer {dst.name} has no layout; run inference first",
                                        op.name, dst.name)
            if len(valid) != 2 or len(dk) != 2:
                raise UnsupportedError(f"{op.name}: OOB fills handle 2-D GM -> L1 copies; found extents {ext}")
            r0, c0 = dr[0][dk[0]], dr[0][dk[1]]
            rows, cols = dshape[dk[0]], dshape[dk[1]]
            for f in ascend.oob_padding_fills(valid, ext, lay[dst.name], pad_value):
                lo_r, lo_c = r0 + f.row_min, c0 + f.col_min
                er = min(f.row_extent, rows - lo_r)
                ec = min(f.col_extent, cols - lo_c)
                if er <= 0 or ec <= 0:
                    continue
                fill = Op("fill", q.next_uid, {"dst": dst.name, "value": float(pad_value),
                                           "fill_region": ((lo_r, er), (lo_c, ec)), "for": op.name},
                          buffers=(dst.name,))
                q.next_uid += 1
                q.ops.append(fill)
                rep.fills.append({"op": fill.name, "for": op.name, "buffer": dst.name,
                                  "region": ((lo_r, er), (lo_c, ec)), "value": float(pad_value)})
    return q, rep


def run_ascend_passes(program: Program, layouts=None, pad_value: float = 0.0) -> tuple[Program, list[PassReport]]:
    """normalize_fractal_storage -> insert_nd2nz -> insert_oob_padding; checks the atomic state first."""
    program.check_end()
    q, r1 = normalize_fractal_storage(program, layouts)
    q, r2 = insert_nd2nz(q)
    q, r3 = insert_oob_padding(q, pad_value=pad_value)
    return q, [r1, r2, r3]
