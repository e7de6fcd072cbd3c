"""A tile op defined entirely outside the package, through the public API: ``prefix_xor`` (a running bitwise XOR
along one axis of an integer fragment, in place).  Its definition (builder, JSON arguments, document check,
layout rule) joins the tile-op registry, its NVIDIA lowering joins the backend's lowering table, and the one
compute function it needs (a bitwise XOR) joins the IR's, whose definition serves the executor and the CUDA
printer alike.  It then runs through the builder, the JSON round trip, inference, the NVIDIA lowering, the
numpy executor and the printed kernel on the CPU harness, equal to ``numpy.bitwise_xor.accumulate``.

The layout rule constrains the fragment as a reduction along the axis would: every line along the axis lives
in one thread (a laid-out fragment that spreads a line over threads is a conflict naming the op), and a
fragment nothing has laid out yet gets, at the common level, whole lines per thread, lines dealt over the
threads row-major.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import codegen, infer
from layoutkit.backends import get_backend
from layoutkit.backends.nv import ir
from layoutkit.errors import ProgramFormatError, UnsupportedError
from layoutkit.infer import COMMON, RuleConflict, RuleResult, TileOp, schema
from layoutkit.testing.cuda_cpu import run_cuda

KIND = "prefix_xor"
XOR = "bitwise_xor"
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")


def build(p, buf, dim: int = -1):
    """``p.prefix_xor(buf, dim)``: ``buf[..., k, ...] ^= buf[..., k - 1, ...]`` for k = 1, 2, ... along ``dim``."""
    p.own(buf)
    what = f"{KIND}#{p.next_uid}"
    if not buf.is_fragment or buf.dtype not in INTEGERS:
        raise infer.OpValidationError(f"{what}: expected an integer fragment; found {buf.scope} {buf.dtype} "
                                      f"{buf.name}", what, buf.name)
    rank = len(buf.shape)
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        raise infer.OpValidationError(f"{what}: expected a dim of {buf.name} (rank {rank}); found {dim!r}", what,
                                      buf.name)
    return p.emit(KIND, {"buffer": buf.name, "dim": dim % rank})


def check_dim(args, shapes, path: str) -> None:
    rank = len(shapes[args["buffer"]])
    if not 0 <= args["dim"] < rank:
        raise ProgramFormatError(f"{path}.args.dim", f"a dim of {args['buffer']} in [0, {rank})", str(args["dim"]))


def lines_layout(shape, dim: int, threads: int) -> lk.Fragment:
    """Whole lines along ``dim`` per thread, lines (row-major over the other dims) dealt over the threads."""
    n = shape[dim]
    others = [d for d in range(len(shape)) if d != dim]

    def line(*v):
        flat = 0
        for d in others:
            flat = flat * shape[d] + v[d]
        return flat

    return lk.Fragment(list(shape), forward_thread_fn=lambda *v: line(*v) % threads,
                       forward_index_fn=lambda *v: line(*v) // threads * n + v[dim])


def rule(op, ctx, level) -> RuleResult:
    name, dim = op.args["buffer"], op.args["dim"]
    have = ctx.layouts.get(name)
    if have is not None:
        threads = np.moveaxis(np.asarray(have.thread_table()), dim + 1, -1)
        if np.any(threads != threads[..., :1]):
            raise RuleConflict(f"{op.name}: {name} laid out as {have.describe()} spreads a line along dim {dim} "
                               "over threads; a prefix along it needs each line in one thread", op.name, name)
        return RuleResult()
    if level < COMMON:
        return RuleResult()
    start, extent = ctx.rng
    frag = lines_layout(ctx.shape(name), dim, extent).bind_thread_range(start, extent)
    return RuleResult({name: frag})


def lower(op, lowering) -> None:
    """Every thread folds its own registers along the line, in order: register ``r`` (position ``k`` on its line)
    becomes ``r_prev ^ r``; the register of position ``k - 1`` must be the same on every thread holding ``r``."""
    name, dim = op.args["buffer"], op.args["dim"]
    frag = lowering.layouts[name]
    regs = np.moveaxis(np.asarray(frag.index_table()), dim, -1).reshape(-1, frag.input_shape[dim])
    prev: dict[int, int] = {}
    order: dict[int, int] = {}
    for k in range(1, regs.shape[1]):
        for r, rp in zip(regs[:, k].tolist(), regs[:, k - 1].tolist()):
            if prev.setdefault(r, rp) != rp or order.setdefault(r, k) != k:
                raise UnsupportedError(f"{op.name}: register {r} of {name} follows registers {prev[r]} and {rp} on "
                                       "different threads; expected one register order on every thread")
    for r in sorted(prev, key=lambda r: (order[r], r)):
        lowering.body.append(ir.Compute(name, r, XOR, ((name, prev[r]), (name, r))))


DEFINITION = TileOp(KIND, builders=((KIND, build),), rule=rule, local=True, required=("buffer", "dim"),
                    argument_types=(("buffer", schema.NAME), ("dim", schema.integer(0, 63))),
                    buffer_args=("buffer",), check_document=check_dim)


@pytest.fixture
def prefix_xor():
    """The op, its NVIDIA lowering and the XOR compute function, registered for one test and removed after."""
    nv = get_backend("sm_80")
    infer.register_op(DEFINITION)
    nv.register_lowering(KIND, lower)
    ir.register_compute_fn(ir.ComputeFn(XOR, 2, np.bitwise_xor, lambda x, floating: f"({x[0]} ^ {x[1]})"))
    infer.clear_caches()
    try:
        yield
    finally:
        infer.unregister_op(KIND)
        nv.unregister_lowering(KIND)
        ir.COMPUTE_FNS.pop(XOR, None)
        infer.clear_caches()


def program(dim: int, M: int = 128, N: int = 32, bM: int = 64, bN: int = 32, threads: int = 64,
            dtype: str = "int32") -> infer.Program:
    p = infer.Program(threads=threads, target="sm_80")
    X, Y = p.tensor("X", (M, N), dtype), p.tensor("Y", (M, N), dtype)
    x = p.alloc_fragment("x", (bM, bN), dtype)
    p.copy(X[0:bM, 0:bN], x)
    p.prefix_xor(x, dim=dim)
    p.copy(x, Y[0:bM, 0:bN])
    return p


def expected(X: np.ndarray, dim: int, bM: int, bN: int) -> np.ndarray:
    """``bitwise_xor.accumulate`` along ``dim`` within each block's tile."""
    M, N = X.shape
    tiles = X.reshape(M // bM, bM, N // bN, bN)
    return np.bitwise_xor.accumulate(tiles, axis=1 if dim == 0 else 3).reshape(M, N)


def test_the_builder_records_the_op_and_refuses_what_its_definition_refuses(prefix_xor):
    p = program(1)
    op = p.ops[1]
    assert (op.kind, op.args, op.buffers) == (KIND, {"buffer": "x", "dim": 1}, ("x",))
    f = p.alloc_fragment("f", (4, 4), "float32")
    with pytest.raises(infer.OpValidationError, match="expected an integer fragment; found local.fragment float32 f"):
        p.prefix_xor(f)
    with pytest.raises(infer.OpValidationError, match=r"expected a dim of x \(rank 2\); found 2"):
        p.prefix_xor(p.buffers["x"], dim=2)


def test_the_json_round_trip_keeps_the_op_and_checks_its_arguments(prefix_xor):
    p = program(0)
    q = infer.Program.from_json(p.to_json())
    assert q.to_json() == p.to_json() and q.ops[1].kind == KIND and q.ops[1].buffers == ("x",)
    doc = json.loads(p.to_json())
    del doc["ops"][1]["args"]["dim"]
    with pytest.raises(ProgramFormatError, match=r"\$\.ops\[1\]\.args: expected the argument 'dim' \(a prefix_xor"):
        infer.Program.from_json(json.dumps(doc))
    doc["ops"][1]["args"]["dim"] = 5
    with pytest.raises(ProgramFormatError, match=r"\$\.ops\[1\]\.args\.dim: expected a dim of x in \[0, 2\)"):
        infer.Program.from_json(json.dumps(doc))
    doc["ops"][1]["args"]["buffer"] = "nowhere"
    with pytest.raises(ProgramFormatError, match=r"\$\.ops\[1\]\.args\.buffer: expected a declared buffer"):
        infer.Program.from_json(json.dumps(doc))


@pytest.mark.parametrize("dim", [0, 1])
def test_inference_keeps_each_line_in_one_thread(prefix_xor, dim):
    p = program(dim)
    frag = infer.infer_layouts(p).layout_map["x"]
    assert frag.is_equal(lines_layout((64, 32), dim, 64))
    threads = np.moveaxis(np.asarray(frag.thread_table()[0]), dim, -1)
    assert np.all(threads == threads[:, :1]) and len(np.unique(threads[:, 0])) == (64 if dim == 1 else 32)


def test_a_layout_that_spreads_a_line_over_threads_is_a_conflict_naming_the_op(prefix_xor):
    p = program(1)
    spread = lk.Fragment([64, 32], forward_thread_fn=lambda i, j: j * 2 + i % 2, forward_index_fn=lambda i, j: i // 2)
    p.annotate_layout({p.buffers["x"]: spread})
    with pytest.raises(lk.LayoutConflictError, match="prefix_xor#1: x laid out as .* spreads a line along dim 1"):
        infer.infer_layouts(p)


@pytest.mark.parametrize("dim", [0, 1])
def test_lowered_executed_and_printed_it_equals_numpy_accumulate(prefix_xor, dim):
    p = program(dim)
    r = infer.infer_layouts(p)
    rng = np.random.default_rng(dim)
    X = rng.integers(-2**31, 2**31, size=(128, 32), dtype=np.int64).astype(np.int32)
    want = expected(X, dim, 64, 32)
    assert np.array_equal(codegen.execute(p, r, {"X": X})["Y"], want)
    src = codegen.emit_cuda(p, r)
    assert " ^ " in src
    out = run_cuda(src, {"X": X, "Y": np.zeros_like(X)})
    assert np.array_equal(out.arrays["Y"].reshape(128, 32), want)


def test_without_its_lowering_the_backend_refuses_naming_the_op(prefix_xor):
    p = program(1)
    r = infer.infer_layouts(p)
    get_backend("sm_80").unregister_lowering(KIND)
    with pytest.raises(UnsupportedError, match=r"op prefix_xor#1 \(prefix_xor\) in a fragment program has no lowering"):
        codegen.lower(p, r)


def test_unregistered_the_op_is_gone():
    with pytest.raises(AttributeError, match="prefix_xor"):
        getattr(infer.Program(threads=32), KIND)
    assert infer.get_op(KIND) is None
