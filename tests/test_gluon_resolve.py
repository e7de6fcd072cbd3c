"""resolve() on the recorded Gluon kernels (tests/data/gluon: GLIR with the register layouts erased, written by
tools/gluon_fixtures.py) -- without triton: every auto encoding is replaced, by the encodings the relations
and the pricing demand; with triton and LAYOUTKIT_GLUON_COMPILE=1 (``make test-gluon``): the resolved kernels
compile to cubin with no more conversions and no narrower global vectors than the authors' (docs/gluon.md)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from layoutkit.errors import UnsupportedError
from layoutkit.frontends.gluon import GlirResolveError, explain, parse_encoding, resolve
from layoutkit.frontends.gluon.encodings import Blocked, DotOperand, NvidiaMma, Slice
from layoutkit.frontends.gluon.glir import AUTO_TEXT, erase_register_layouts, read_aliases, tensor_types

DATA = Path(__file__).parent / "data" / "gluon"
FIXTURES = sorted(p for p in DATA.glob("*.glir") if not p.name.endswith(".author.glir"))


def target_of(path: Path) -> str:
    return "sm_" + path.name.split(".sm")[1][:2]


def encodings_of(text: str) -> list:
    """The distributed encodings of every tensor type of the module, in order."""
    aliases = read_aliases(text)
    out = []
    for line in text.split("\n"):
        if line.startswith("#"):
            continue
        out += [parse_encoding(t.encoding_text, aliases) for t in tensor_types(line)]
    return out


def test_the_recorded_list_is_there():
    assert len(FIXTURES) == 35
    assert all(AUTO_TEXT in p.read_text() for p in FIXTURES)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_auto_encoding_is_resolved(path):
    erased = path.read_text()
    out = resolve(erased, target_of(path))
    assert AUTO_TEXT not in out
    # the author's erasure is what the fixture holds, and the shared layouts are the author's
    author = path.with_name(path.name.replace(".glir", ".author.glir")).read_text()
    assert erase_register_layouts(author) == erased
    assert re.findall(r"memdesc<[^>]*>", out) == re.findall(r"memdesc<[^>]*>", author)
    assert len(encodings_of(out)) == len(encodings_of(author))


def resolved(name: str, target: str = "sm_80") -> list:
    return encodings_of(resolve((DATA / f"{name}.sm{target[3:]}.glir").read_text(), target))


def test_copy_is_vectorised_and_coalesced():
    assert set(resolved("copy_1d")) == {Blocked((4,), (32,), (4,), (0,))}


def test_row_reduction_keeps_warps_off_the_reduced_dim():
    encs = resolved("row_sum")
    parents = {e for e in encs if isinstance(e, Blocked)}
    assert len(parents) == 1
    (b,) = parents
    assert b.warps_per_cta[1] == 1 and b.size_per_thread == (1, 4)      # 16-byte rows, no cross-warp reduction
    assert Slice(1, b) in encs and Slice(0, b) in encs


def test_mma_operands_follow_the_accumulator():
    encs = resolved("matmul_mma_v2")
    mma = NvidiaMma(2, 0, (2, 2), (16, 8))
    assert mma in encs and DotOperand(0, mma, 2) in encs and DotOperand(1, mma, 2) in encs
    wg = resolved("matmul_wgmma", "sm_90")
    assert NvidiaMma(3, 0, (4, 1), (16, 64, 16)) in wg


def test_author_conversion_between_two_global_accesses_is_kept():
    encs = resolved("transpose_copy")
    blocked = {e for e in encs if isinstance(e, Blocked)}
    assert len(blocked) == 2      # loaded row-major, stored column-major: each side coalesced
    assert {b.order[0] for b in blocked} == {0, 1}


def test_explain_names_the_deciding_op():
    why = explain((DATA / "row_sum.sm80.glir").read_text(), "sm_80")
    assert any("a slice (dim 1)" in v and "tt.reduce" in v for v in why.values())
    assert any("global load at tt.load" in v for v in why.values())


def test_unread_op_is_a_typed_error_naming_it():
    text = (DATA / "copy_1d.sm80.glir").read_text().replace("tt.load", "tt.mystery_load", 1)
    with pytest.raises(GlirResolveError, match=r"tt.mystery_load.*line \d+"):
        resolve(text, "sm_80")
    with pytest.raises(UnsupportedError, match="target such as"):
        resolve((DATA / "copy_1d.sm80.glir").read_text(), "gpu")


def test_seed_is_a_constraint():
    text = (DATA / "copy_1d.sm80.glir").read_text()
    seed = "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
    line = next(ln for ln in text.split("\n") if "tt.make_range" in ln)
    pinned = text.replace(line, line.replace(AUTO_TEXT, seed))
    assert set(encodings_of(resolve(pinned, "sm_80"))) == {Blocked((1,), (32,), (4,), (0,))}


# ---- compiled by Triton ------------------------------------------------------------------------------------

compile_all = pytest.mark.skipif(not os.environ.get("LAYOUTKIT_GLUON_COMPILE"),
                                 reason="compiling the recorded kernels is slow: LAYOUTKIT_GLUON_COMPILE=1 "
                                        "(make test-gluon)")


@pytest.mark.oracle
@compile_all
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_resolved_kernel_compiles_no_worse_than_the_author(path):
    pytest.importorskip("triton.experimental.gluon")
    from layoutkit.frontends.gluon.toolchain import compile_glir

    target = target_of(path)
    ours = compile_glir(resolve(path.read_text(), target), target)
    author = compile_glir(path.with_name(path.name.replace(".glir", ".author.glir")).read_text(), target)
    assert len(ours.asm["cubin"]) > 0
    assert ours.asm["ttgir"].count("ttg.convert_layout") <= author.asm["ttgir"].count("ttg.convert_layout")

    def widths(ptx: str) -> list[int]:
        return [int(m.group(1) or 1) * int(m.group(2))
                for m in re.finditer(r"\b[ls][dt]\.global(?:\.[a-z_]+)*?(?:\.v(\d))?\.(?:b|f|u|s)(\d+)", ptx)]

    assert min(widths(ours.asm["ptx"]), default=0) >= min(widths(author.asm["ptx"]), default=0)


@pytest.mark.oracle
@compile_all
def test_triton_alone_refuses_an_erased_kernel():
    pytest.importorskip("triton.experimental.gluon")
    from layoutkit.frontends.gluon.toolchain import compile_glir

    with pytest.raises(Exception):  # noqa: B017  (Triton's own pass failure, whatever its type)
        compile_glir((DATA / "row_sum.sm80.glir").read_text(), "sm_80")


MODULE = ('module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:80", '
          '"ttg.threads-per-warp" = 32 : i32} {\n')
AUTO = "#gluon.auto_encoding"


def test_cp_async_gets_at_least_four_bytes_a_thread():
    # 128 f16 over 128 threads: one element a thread would be cheapest, but cp.async copies 4 bytes or more
    text = ("#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>\n"
            "#smem = #ttg.shared_memory\n" + MODULE +
            "  tt.func public @k(%inp: !tt.ptr<f16> {tt.divisibility = 16 : i32}) {\n"
            "    %smem = ttg.local_alloc : () -> !ttg.memdesc<128xf16, #shared, #smem, mutable>\n"
            f"    %x = tt.make_range {{end = 128 : i32, start = 0 : i32}} : tensor<128xi32, {AUTO}>\n"
            f"    %0 = tt.splat %inp : !tt.ptr<f16> -> tensor<128x!tt.ptr<f16>, {AUTO}>\n"
            f"    %1 = tt.addptr %0, %x : tensor<128x!tt.ptr<f16>, {AUTO}>, tensor<128xi32, {AUTO}>\n"
            "    %2 = ttg.async_copy_global_to_local %1, %smem : "
            f"tensor<128x!tt.ptr<f16>, {AUTO}> -> <128xf16, #shared, #smem, mutable>\n"
            "    tt.return\n  }\n}\n")
    (enc,) = set(encodings_of(resolve(text, "sm_80")))
    assert isinstance(enc, Blocked) and enc.size_per_thread == (2,)


def test_a_call_returning_a_scalar_relates_only_its_tensors():
    text = (MODULE +
            "  tt.func public @k(%out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {\n"
            f"    %a = arith.constant dense<1.0> : tensor<128xf32, {AUTO}>\n"
            f"    %s = tt.call @total(%a) : (tensor<128xf32, {AUTO}>) -> f32\n"
            "    tt.store %out, %s : !tt.ptr<f32>\n"
            "    tt.return\n  }\n"
            f"  tt.func private @total(%input: tensor<128xf32, {AUTO}>) -> f32 {{\n"
            "    %0 = \"tt.reduce\"(%input) <{axis = 0 : i32}> ({\n"
            "    ^bb0(%x: f32, %y: f32):\n"
            "      %1 = arith.addf %x, %y : f32\n"
            "      tt.reduce.return %1 : f32\n"
            f"    }}) : (tensor<128xf32, {AUTO}>) -> f32\n"
            "    tt.return %0 : f32\n  }\n}\n")
    resolved = resolve(text, "sm_80")
    assert AUTO not in resolved
    assert len(set(encodings_of(resolved))) == 1


MASKED = """module attributes {"ttg.num-warps" = WARPS : i32, ttg.target = "cuda:90"} {
  tt.func public @k(%p: !tt.ptr<f32> {tt.divisibility = PTR : i32}, %n: i32 BOUND, %stride: i32 STRIDE) {
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %stride : i32
    %base = tt.addptr %p, %row : !tt.ptr<f32>, i32
    %offs = tt.make_range {end = SIZE : i32, start = 0 : i32} : tensor<SIZExi32, AUTO>
    %bound = tt.splat %n : i32 -> tensor<SIZExi32, AUTO>
    %mask = arith.cmpi slt, %offs, %bound : tensor<SIZExi32, AUTO>
    %ptrs = tt.splat %base : !tt.ptr<f32> -> tensor<SIZEx!tt.ptr<f32>, AUTO>
    %addr = tt.addptr %ptrs, %offs : tensor<SIZEx!tt.ptr<f32>, AUTO>, tensor<SIZExi32, AUTO>
    %x = tt.load %addr, %mask : tensor<SIZEx!tt.ptr<f32>, AUTO>
    %y = arith.addf %x, %x : tensor<SIZExf32, AUTO>
    tt.store %addr, %y, %mask : tensor<SIZEx!tt.ptr<f32>, AUTO>
    tt.return
  }
}"""


@pytest.mark.parametrize(("warps", "size", "ptr", "bound", "vector"), [
    (4, 512, 16, 16, 4),    # 16-byte aligned rows, a bound of 16: a mask constant in runs of 16 -> 4 x f32
    (4, 512, 16, 2, 2),     # a bound divisible by 2 only: the mask changes every 2 elements
    (4, 512, 8, 16, 2),     # 8-byte aligned rows
    (1, 64, 16, 16, 4),     # 64 elements on 32 lanes: the widest vector (lanes broadcast) ties, and wins
])
def test_masked_access_is_as_wide_as_the_axis_facts_allow(warps, size, ptr, bound, vector):
    text = (MASKED.replace("AUTO", AUTO_TEXT).replace("WARPS", str(warps)).replace("SIZE", str(size))
            .replace("PTR", str(ptr)).replace("BOUND", f"{{tt.divisibility = {bound} : i32}}")
            .replace("STRIDE", "{tt.divisibility = 16 : i32}"))
    found = [e for e in encodings_of(resolve(text, "sm_90")) if isinstance(e, Blocked)]
    assert {e.size_per_thread for e in found} == {(vector,)}


MASKED_2D = """module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func public @k(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %m: i32, %n: i32 BOUND, %stride: i32 STRIDE) {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, AUTO>
    %c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, AUTO>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32, AUTO> -> tensor<32x1xi32, AUTO>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<64xi32, AUTO> -> tensor<1x64xi32, AUTO>
    %st = tt.splat %stride : i32 -> tensor<32x1xi32, AUTO>
    %ro = arith.muli %r2, %st : tensor<32x1xi32, AUTO>
    %rb = tt.broadcast %ro : tensor<32x1xi32, AUTO> -> tensor<32x64xi32, AUTO>
    %cb = tt.broadcast %c2 : tensor<1x64xi32, AUTO> -> tensor<32x64xi32, AUTO>
    %off = arith.addi %rb, %cb : tensor<32x64xi32, AUTO>
    %ms = tt.splat %m : i32 -> tensor<32x1xi32, AUTO>
    %mr = arith.cmpi slt, %r2, %ms : tensor<32x1xi32, AUTO>
    %ns = tt.splat %n : i32 -> tensor<1x64xi32, AUTO>
    %mc = arith.cmpi slt, %c2, %ns : tensor<1x64xi32, AUTO>
    %mrb = tt.broadcast %mr : tensor<32x1xi1, AUTO> -> tensor<32x64xi1, AUTO>
    %mcb = tt.broadcast %mc : tensor<1x64xi1, AUTO> -> tensor<32x64xi1, AUTO>
    %mask = arith.andi %mrb, %mcb : tensor<32x64xi1, AUTO>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<32x64x!tt.ptr<f32>, AUTO>
    %addr = tt.addptr %ps, %off : tensor<32x64x!tt.ptr<f32>, AUTO>, tensor<32x64xi32, AUTO>
    %x = tt.load %addr, %mask : tensor<32x64x!tt.ptr<f32>, AUTO>
    tt.store %addr, %x, %mask : tensor<32x64x!tt.ptr<f32>, AUTO>
    tt.return
  }
}"""


@pytest.mark.parametrize(("bound", "vector"), [(16, 4), (2, 2)])
def test_a_two_dim_mask_bounds_the_vector_along_the_contiguous_dim(bound, vector):
    # rows < m (no hint: constant along the columns anyway) and columns < n (divisible by `bound`): the mask is
    # constant in runs of min(64, bound) along the contiguous columns
    text = (MASKED_2D.replace("AUTO", AUTO_TEXT)
            .replace("BOUND", f"{{tt.divisibility = {bound} : i32}}").replace("STRIDE", "{tt.divisibility = 16 : i32}"))
    found = {e for e in encodings_of(resolve(text, "sm_90")) if isinstance(e, Blocked)}
    assert {(e.size_per_thread, e.order) for e in found} == {((1, vector), (1, 0))}


ROUND_TRIP = """module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:80", \
"ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k() attributes {noinline = false} {
    %a = arith.constant dense<1> : tensor<64x32xi32, #gluon.auto_encoding>
    %b = tt.reshape %a : tensor<64x32xi32, #gluon.auto_encoding> -> tensor<64x2x16xi32, #gluon.auto_encoding>
    %c = tt.trans %b {order = array<i32: 0, 2, 1>} : tensor<64x2x16xi32, #gluon.auto_encoding> -> \
tensor<64x16x2xi32, #gluon.auto_encoding>
    %l, %r = tt.split %c : tensor<64x16x2xi32, #gluon.auto_encoding> -> tensor<64x16xi32, #gluon.auto_encoding>
    %d = tt.join %l, %r : tensor<64x16xi32, #gluon.auto_encoding> -> tensor<64x16x2xi32, #gluon.auto_encoding>
    %e = tt.trans %d {order = array<i32: 0, 2, 1>} : tensor<64x16x2xi32, #gluon.auto_encoding> -> \
tensor<64x2x16xi32, #gluon.auto_encoding>
    %f = tt.reshape %e : tensor<64x2x16xi32, #gluon.auto_encoding> -> tensor<64x32xi32, #gluon.auto_encoding>
    %g = arith.addi %a, %f : tensor<64x32xi32, #gluon.auto_encoding>
    tt.return
  }
}
"""


def test_refusal_names_the_same_op_under_every_hash_seed():
    """A value whose layout comes back to it through shape ops is refused, naming one op: the same one whatever
    order Python's hash seed gives sets (the classes are visited in program order)."""
    script = ("import sys\nfrom layoutkit.frontends.gluon import GlirResolveError, resolve\n"
              "try:\n    resolve(sys.stdin.read(), 'sm_80')\nexcept GlirResolveError as err:\n    print(err)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    root = str(Path(__file__).resolve().parent.parent)
    messages = {subprocess.run([sys.executable, "-c", script], input=ROUND_TRIP, capture_output=True, text=True,
                               env={**env, "PYTHONHASHSEED": str(seed), "PYTHONPATH": root}, check=True).stdout
                for seed in range(6)}
    assert len(messages) == 1
    assert "derived from itself through shape ops" in messages.pop()
