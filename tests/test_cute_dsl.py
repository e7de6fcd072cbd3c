"""The CuTe DSL bridge against CuTe DSL itself (``nvidia-cutlass-dsl``, evaluated on the CPU): layouts,
swizzled layouts, the wgmma shared-memory atoms and the TV layouts of tiled MMAs (mma.sync m16n8k16)
and tiled copies (ldmatrix, cp.async), element for element, both ways.

CuTe DSL builds layouts only while a ``@cute.jit`` function is traced; ``cute.compile`` traces one
without a GPU (launching it would need one).  Skipped when CuTe DSL is not installed.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from layoutkit import tla
from layoutkit.errors import LimitError, UnsupportedError
from layoutkit.targets import nv

try:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync, warp, warpgroup
except Exception:  # noqa: BLE001 - any import failure means "no oracle"
    cute = None

pytestmark = [pytest.mark.oracle, pytest.mark.skipif(cute is None, reason="CuTe DSL is not installed")]


def traced(build):
    """``build()`` run inside a traced ``@cute.jit`` function (compiled, never launched)."""
    box = {}

    @cute.jit
    def kernel():
        box["out"] = build()

    cute.compile(kernel)
    return box["out"]


def dsl_values(x) -> list[int]:
    """CuTe DSL's own ``x(i)`` for every colexicographic index ``i`` (called while traced)."""
    return [int(x(i)) for i in range(cute.size(x))]


def tla_values(x) -> list[int]:
    return [int(x(i)) for i in range(tla.size(x))]


LAYOUTS = [
    ((4, 8), (8, 1)),
    ((4, 8), (1, 4)),
    (((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
    ((2, (3, 4)), (0, (1, 6))),
    (((2, 2), (2, 4)), ((1, 16), (4, 32))),
    (12, 3),
    ((3, 1, 5), (5, 7, 1)),
]


def test_layouts_round_trip_element_for_element():
    def build():
        out = []
        for shape, stride in LAYOUTS:
            ours = tla.make_layout(shape, stride)
            theirs = tla.to_cute_dsl(ours)
            back = tla.from_cute_dsl(theirs)
            native = tla.from_cute_dsl(cute.make_layout(shape, stride=stride))
            out.append((ours, str(theirs), dsl_values(theirs), back, native))
        return out

    for ours, text, values, back, native in traced(build):
        assert values == tla_values(ours), text
        assert back == tla.make_layout(tla.make_static(ours.shape), tla.make_static(ours.stride))
        assert native == back and str(back).replace("_", "") == text


def _random_mode(rng: random.Random, depth: int):
    """A random (shape, stride) mode: a leaf or, while ``depth`` lasts, a tuple of modes."""
    if depth == 0 or rng.random() < 0.5:
        return rng.choice((1, 2, 3, 4, 8)), rng.choice((0, 1, 2, 3, 5, 8, 16, -1, -4))
    modes = [_random_mode(rng, depth - 1) for _ in range(rng.randint(1, 3))]
    return tuple(m[0] for m in modes), tuple(m[1] for m in modes)


def test_random_layouts_and_swizzles_agree_with_cute_dsl():
    rng = random.Random(39)
    layouts = [_random_mode(rng, 2) for _ in range(40)]
    swizzles = [(b, m, s) for b in range(4) for m in range(4) for s in (-4, 3, 4) if abs(s) >= b][:20]

    def build():
        out = []
        for shape, stride in layouts:
            theirs = cute.make_layout(shape, stride=stride)
            out.append((str(theirs), dsl_values(theirs), tla.from_cute_dsl(theirs)))
        for b, m, s in swizzles:
            theirs = cute.make_composed_layout(cute.make_swizzle(b, m, s), 0, cute.make_layout(256))
            out.append((str(theirs), dsl_values(theirs), tla.from_cute_dsl(theirs)))
        return out

    for text, values, ours in traced(build):
        assert tla_values(ours) == values, text


def test_swizzles_and_composed_layouts_round_trip():
    def build():
        sw = cute.make_swizzle(3, 3, 3)
        plain = cute.make_layout((8, 64), stride=(64, 1))
        cases = [
            cute.make_composed_layout(sw, 0, plain),
            cute.make_composed_layout(cute.make_swizzle(2, 4, -3), 16, cute.make_layout((16, 32), stride=(1, 16))),
            cute.make_composed_layout(cute.make_layout(8, stride=2), 3, cute.make_layout((2, 4), stride=(1, 2))),
            cute.tile_to_shape(cute.make_composed_layout(sw, 0, plain), (32, 64), (0, 1)),
        ]
        out = []
        for c in cases:
            ours = tla.from_cute_dsl(c)
            again = tla.to_cute_dsl(ours)
            out.append((str(c), dsl_values(c), ours, dsl_values(again), tla.from_cute_dsl(again)))
        s = tla.from_cute_dsl(sw)
        out_sw = (s, [int(v) for v in (sw.num_bits, sw.num_base, sw.num_shift)], str(tla.to_cute_dsl(s)))
        return out, out_sw

    cases, (s, bms, sw_text) = traced(build)
    for text, values, ours, again_values, again in cases:
        assert isinstance(ours, tla.ComposedLayout), text
        assert tla_values(ours) == values == again_values, text
        assert again == ours
    assert s == tla.Swizzle(3, 3, 3) and [s.bits, s.base, s.shift] == bms and sw_text == "S<3,3,3>"
    assert str(cases[0][2]) == "Sw<3,3,3> o 0 o (_8,_64):(_64,_1)"


@pytest.mark.parametrize("dtype", ["Float16", "TFloat32", "Int8"])
def test_wgmma_shared_memory_atoms(dtype):
    kinds = list(warpgroup.SmemLayoutAtomKind)

    def build():
        out = []
        for kind in kinds:
            atom = warpgroup.make_smem_layout_atom(kind, getattr(cutlass, dtype))
            ours = tla.from_cute_dsl(atom)
            out.append((kind.name, str(atom), dsl_values(atom), ours, dsl_values(tla.to_cute_dsl(ours))))
        return out

    results = traced(build)
    assert len(results) == 8
    for name, text, values, ours, again in results:
        assert tla_values(ours) == values == again, (name, text)
        assert isinstance(ours.outer, tla.Swizzle), name


def test_wgmma_atom_swizzles_are_the_bank_swizzles_in_bytes():
    """CuTe DSL applies a wgmma atom's swizzle to the byte address (the smem pointer); lowering its base by
    log2(element bytes) gives the element-offset swizzle, which is layoutkit's bank swizzle of that kind."""
    kinds = {"SW32": "quarter", "SW64": "half", "SW128": "full"}
    dtypes = {"Float16": "float16", "TFloat32": "float32", "Int8": "int8"}

    def build():
        return [(major, kind, dtype, tla.from_cute_dsl(warpgroup.make_smem_layout_atom(
                    getattr(warpgroup.SmemLayoutAtomKind, f"{major}_{kind}"), getattr(cutlass, dtype))))
                for major in ("K", "MN") for kind in kinds for dtype in dtypes]

    for major, kind, dtype, atom in traced(build):
        sw = atom.outer
        shift_bits = (tla.element_bits(dtypes[dtype]) // 8).bit_length() - 1
        in_elements = tla.Swizzle(sw.bits, sw.base - shift_bits, sw.shift)
        assert in_elements == nv.cute_swizzle(kinds[kind], dtypes[dtype]), (major, kind, dtype)


def _tv_check(tv_dsl_values, tv: tla.Layout, tile: tuple[int, ...]) -> None:
    """The Fragment of ``tv`` puts value ``v`` of thread ``t`` where CuTe DSL's ``tv(t, v)`` points."""
    threads, values = tla.size(tv[0]), tla.size(tv[1])
    image = np.asarray(tv_dsl_values).reshape(values, threads).T  # colexicographic (t, v)
    assert image.tolist() == tla.make_layout(tv.shape, tv.stride).table().reshape(values, threads).T.tolist()
    frag = tla.tv_fragment(tv, tile)
    coords = np.unravel_index(image, tile, order="F")  # the TV image is the tile's colexicographic index
    held = frag.thread_table()[(slice(None),) + coords]  # [replica, t, v]
    assert np.all(frag.index_table()[coords] == np.arange(values)[None, :])
    assert np.all(np.any(held == np.arange(threads)[None, :, None], axis=0))
    assert frag.replicate_size * threads * values == tla.size(tv) * frag.replicate_size
    assert frag.size * frag.replicate_size == threads * values


@pytest.mark.parametrize("atoms", [(1, 1, 1), (2, 2, 1)])
def test_mma_sync_m16n8k16_tv_layouts(atoms):
    def build():
        op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        tm = cute.make_tiled_mma(op, atoms)
        m, n, k = (tm.get_tile_size(d) for d in range(3))
        out = []
        for name, tv, tile in (("A", tm.tv_layout_A_tiled, (m, k)), ("B", tm.tv_layout_B_tiled, (n, k)),
                               ("C", tm.tv_layout_C_tiled, (m, n)), ("A atom", tm.tv_layout_A, (16, 16)),
                               ("C atom", tm.tv_layout_C, (16, 8))):
            ours = tla.from_cute_dsl(tv)
            out.append((name, dsl_values(tv), ours, tile, dsl_values(tla.to_cute_dsl(ours))))
        return out

    results = traced(build)
    for name, values, ours, tile, again in results:
        assert values == again, name
        _tv_check(values, ours, tile)

    def back_to_cute():  # layoutkit's fragments, as CuTe TV layouts, evaluated by CuTe DSL
        return [dsl_values(tla.to_cute_dsl(tla.fragment_tv(tla.tv_fragment(ours, tile))))
                for _, _, ours, tile, _ in results]

    assert traced(back_to_cute) == [r[1] for r in results]
    frag = tla.tv_fragment(traced(build)[2][2], (16 * atoms[0], 8 * atoms[1]))
    assert frag.replicate_size == 1 and frag.thread_extent == 32 * atoms[0] * atoms[1]


def test_ldmatrix_and_cp_async_tiled_copies():
    def build():
        op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        tm = cute.make_tiled_mma(op, (2, 2, 1))
        out = []
        for trans in (False, True):
            x4 = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(trans, 4), cutlass.Float16)
            x2 = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(trans, 2), cutlass.Float16)
            for tc in (cute.make_tiled_copy_A(x4, tm), cute.make_tiled_copy_B(x2, tm)):
                tile = tuple(cute.size(t) for t in tc.tiler_mn)
                for tv in (tc.layout_tv_tiled, tc.layout_src_tv_tiled, tc.layout_dst_tv_tiled):
                    out.append((f"ldmatrix trans={trans}", dsl_values(tv), tla.from_cute_dsl(tv), tile))
        cpa = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=128)
        for thr, val in ((((16, 8), (8, 1)), ((1, 8), (8, 1))), (((32, 4), (1, 32)), ((8, 1), (1, 8)))):
            tc = cute.make_tiled_copy_tv(cpa, cute.make_layout(thr[0], stride=thr[1]),
                                         cute.make_layout(val[0], stride=val[1]))
            tile = tuple(cute.size(t) for t in tc.tiler_mn)
            out.append(("cp.async", dsl_values(tc.layout_tv_tiled), tla.from_cute_dsl(tc.layout_tv_tiled), tile))
        return out

    results = traced(build)
    assert [r[0] for r in results].count("cp.async") == 2
    for name, values, ours, tile in results:
        assert tla_values(ours) == values, name
        _tv_check(values, ours, tile)


def test_bank_check_of_a_converted_shared_memory_layout():
    """ldmatrix.x4 of the mma.sync A operand from a CuTe DSL 16 x 64 fp16 tile: 8-way conflicts row-major,
    none with CuTe's Sw<3,3,3> atom (the 128-byte swizzle)."""

    def build():
        op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        tm = cute.make_tiled_mma(op)
        atom = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
        return (tla.from_cute_dsl(tm.tv_layout_A), tla.from_cute_dsl(cute.tile_to_shape(atom, (16, 64), (0, 1))),
                tla.from_cute_dsl(cute.make_layout((16, 64), stride=(64, 1))))

    tv_a, swizzled, plain = traced(build)
    fragment = tla.tv_fragment(tv_a, (16, 16))
    assert fragment.prove_injective().verdict and swizzled.to_layout().prove_bijective().verdict
    access = fragment.repeat([1, 4], repeat_on_thread=False)  # four k-blocks per thread
    ways = [nv.bank_conflicts(s.to_layout(), access, "float16", "ldmatrix.x4").ways for s in (plain, swizzled)]
    assert ways == [8, 1]


def test_refusals():
    def build():
        out = []
        for make in (lambda: cute.make_layout((cutlass.Int32(4), 8), stride=(8, 1)),
                     lambda: cute.make_layout((4, 8), stride=(cute.E(0), cute.E(1))),
                     lambda: cute.make_composed_layout(cute.make_layout((4, 8)), (1, 0), cute.make_layout(
                         (2, 2), stride=(cute.E(0), cute.E(1)))),
                     lambda: 3):
            try:
                tla.from_cute_dsl(make())
                out.append(None)
            except UnsupportedError as err:
                out.append(str(err))
        try:
            tla.to_cute_dsl(tla.make_layout((4, 2), (1, 2**31)))
        except LimitError as err:
            out.append(str(err))
        return out

    def build_b_x4():  # ldmatrix.x4 moves 16 columns of B per warp where the MMA has 8: registers repeat
        op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        x4 = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
        tc = cute.make_tiled_copy_B(x4, cute.make_tiled_mma(op, (2, 2, 1)))
        return tla.from_cute_dsl(tc.layout_dst_tv_tiled), tuple(cute.size(t) for t in tc.tiler_mn)

    dynamic, basis, coordinate_offset, other, wide = traced(build)
    assert "32-bit integers" in wide and "stride 2147483648" in wide
    assert "(0,)" in dynamic and "dynamic: known only at run time" in dynamic
    assert "stride leaf at mode (0,)" in basis and "a basis stride" in basis
    assert "a coordinate offset" in coordinate_offset
    assert "found int" in other
    tv, tile = traced(build_b_x4)
    with pytest.raises(UnsupportedError, match="value mode of stride 0"):
        tla.tv_fragment(tv, tile)
    with pytest.raises(UnsupportedError, match="traced"):
        tla.to_cute_dsl(tla.make_layout((4, 8), (8, 1)))  # plain Python: no trace to build it in


def test_plot_takes_a_cute_dsl_layout():
    from layoutkit.plot import ascii_table, plot_layout

    def build():
        sw = cute.make_composed_layout(cute.make_swizzle(2, 0, 2), 0, cute.make_layout((4, 4), stride=(4, 1)))
        return ascii_table(sw), ascii_table(tla.from_cute_dsl(sw).to_layout()), len(plot_layout(sw).axes)

    theirs, ours, axes = traced(build)
    assert theirs == ours and axes == 2
    assert theirs.splitlines()[2].split() == ["1", "5", "4", "7", "6"]  # row 1: 4..7 with bits 0-1 ^= 1
