"""Layout conversions lowered for NVIDIA: the fragment is stored through the shared staging tile the cost
model priced, ``__syncthreads()``, and loaded back in the layout the op reads; the executor matches numpy
exactly, the CUDA compiles, and the IR's shared accesses realise the priced wavefronts."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest

from layoutkit import codegen, infer
from layoutkit.algebra import compile_numpy, free_vars
from layoutkit.backends.nv import cuda, ir
from layoutkit.backends.nv.smem_cost import WAVEFRONT_BYTES, shared_instruction, staging_layout
from layoutkit.errors import UnsupportedError
from layoutkit.targets.nv.banks import bank_conflicts

from .test_infer_conversions import transpose_through


def row_sum_bias() -> infer.Program:
    """``s = sum(x, dim=1)``, ``y[i, j] = x[i, j] + s[j]``: TileLang finds no layout; the default model
    reads ``s`` through a conversion (replicated along rows -> along columns)."""
    p = infer.Program(threads=128)
    G = p.tensor("G", (256, 256), "float32")
    H = p.tensor("H", (256, 256), "float32")
    x = p.alloc_fragment("x", (32, 32), "float32")
    s = p.alloc_fragment("s", (32,), "float32")
    y = p.alloc_fragment("y", (32, 32), "float32")
    p.copy(G[0:32, 0:32], x)
    p.reduce(x, s, dim=1, kind="sum")
    p.parallel((32, 32), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)),
                                                                     (s, lambda i, j: (j,))], compute="add")
    p.copy(y, H[0:32, 0:32])
    return p


def _tiles(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` as ``[tile row, tile col, n, n]`` blocks (every block runs the program on its own tile)."""
    return a.reshape(a.shape[0] // n, n, a.shape[1] // n, n).transpose(0, 2, 1, 3)


def _flat(body) -> list:
    out = []
    for st in body:
        out += _flat(st.body) if isinstance(st, ir.For) else [st]
    return out


def _loops(body) -> list:
    return [st for st in body if isinstance(st, ir.For)] + [x for st in body if isinstance(st, ir.For)
                                                            for x in _loops(st.body)]


def test_transpose_through_shared_memory_equals_numpy():
    p = transpose_through()
    r = infer.infer_layouts(p, cost_model="smem-aware")
    (conv,) = r.conversions
    assert conv.detail.staging == "padded"
    k = codegen.lower(p, r)
    assert [(b.name, b.size, b.scope) for b in k.buffers if b.scope != "global"] == [
        ("x", 32, "reg"), ("y", 32, "reg"), ("x__stage1", 63 * 68 + 64, "shared"), ("x__conv", 32, "reg")]
    a = np.arange(256 * 256, dtype=np.float32).reshape(256, 256) * 0.5 - 7
    out = codegen.execute(p, r, {"Gi": a})["Go"]
    want = _tiles(a, 64).transpose(0, 1, 3, 2)  # each 64 x 64 tile transposed in place
    np.testing.assert_array_equal(_tiles(out, 64), want)


def test_row_sum_bias_converted_equals_numpy():
    p = row_sum_bias()
    r = infer.infer_layouts(p)
    (conv,) = r.conversions
    assert (conv.buffer, conv.detail) == ("s", None)  # the default model records no staging: row-major
    k = codegen.lower(p, r)
    assert ("s__stage2", 32, "shared") in [(b.name, b.size, b.scope) for b in k.buffers]
    # small integers: every fp32 sum is exact, whatever order the reduction folds in
    a = (np.arange(256 * 256) % 13 - 6).astype(np.float32).reshape(256, 256)
    out = codegen.execute(p, r, {"G": a})["H"]
    t = _tiles(a, 32)
    want = t + t.sum(axis=3)[:, :, None, :]  # y[i, j] = x[i, j] + sum_k x[j, k]
    np.testing.assert_array_equal(_tiles(out, 32), want)


def _ir_wavefronts(k: ir.Kernel, stage: str, smem, dtype: str, store: bool) -> tuple[int, int]:
    """(instructions, wavefronts) of the shared stores (or loads) of ``stage`` in ``k``, from the IR's own
    addresses: every unrolled statement is one warp instruction of ``vec`` elements per thread."""
    (loop,) = [f for f in _loops(k.body) if any(
        isinstance(s, ir.Store if store else ir.Load) and stage in (s.dst, s.src) for s in f.body)]
    (st,) = loop.body
    addr, off = (st.dst_addr, st.src_off) if store else (st.src_addr, st.dst_off)
    tid = np.arange(k.threads)[:, None]
    it = np.arange(loop.extent)[None, :]
    env = {"tid": tid, loop.var.name: it}
    vs = tuple(free_vars(addr))
    (a,) = compile_numpy((addr,), vs)(*(env[v.name] for v in vs))
    a = np.broadcast_to(a, (k.threads, loop.extent))[:, :, None] + np.arange(st.vec)  # [thread, stmt, lane]
    coord_of = np.full(int(np.asarray(smem.linear_table()).max()) + 1, -1)
    coord_of[np.asarray(smem.linear_table()).reshape(-1)] = np.arange(int(np.prod(smem.input_shape)))
    coords = np.stack(np.unravel_index(coord_of[a.reshape(k.threads, -1)], smem.input_shape), axis=-1)
    rep = bank_conflicts(smem, coords.astype(np.int64), dtype, shared_instruction(st.vec, dtype, store), method="exact")
    return rep.instructions, rep.wavefronts


def test_ir_shared_accesses_realise_the_priced_wavefronts():
    """The IR stores ``x`` 4 floats at a time (8 st.shared.b128 per thread: 32 warp instructions) and loads
    ``x'`` one at a time (32 ld.shared.b32 per thread: 128 warp instructions); their bank report from the
    IR's addresses is the model's 128 + 512 wavefronts."""
    p = transpose_through()
    r = infer.infer_layouts(p, cost_model="smem-aware")
    (conv,) = r.conversions
    k = codegen.lower(p, r)
    smem = staging_layout((64, 64), "float32", conv.detail.staging)
    stores = [s for s in _flat(k.body) if isinstance(s, ir.Store) and s.dst == "x__stage1"]
    loads = [s for s in _flat(k.body) if isinstance(s, ir.Load) and s.src == "x__stage1"]
    assert [(s.vec, s.guard) for s in stores] == [(4, ())] and [(s.vec, s.guard) for s in loads] == [(1, ())]
    assert _ir_wavefronts(k, "x__stage1", smem, "float32", True) == (32, conv.detail.store_wavefronts) == (32, 128)
    assert _ir_wavefronts(k, "x__stage1", smem, "float32", False) == (128, conv.detail.load_wavefronts) == (128, 512)
    assert conv.cost.mem == conv.detail.wavefronts * WAVEFRONT_BYTES
    # the barrier sits between the last store and the first load, and the loop reads only x__conv
    kinds = [type(s).__name__ for s in _flat(k.body)]
    first_load = kinds.index("Load", kinds.index("Store"))
    assert kinds[kinds.index("Store"):first_load] == ["Store", "Barrier"]
    reads = {b for s in _flat(k.body) if isinstance(s, (ir.Compute, ir.Move)) for b in
             ([x for x, _ in s.srcs] if isinstance(s, ir.Compute) else [s.src])}
    assert reads == {"x__conv"}


def column_sum_bias() -> infer.Program:
    """``s = sum(x, dim=0)`` (column sums, spread over warps: a shared cross-warp step), then
    ``y[i, j] = x[i, j] + s[i]``: ``s`` is read along rows through a conversion."""
    p = infer.Program(threads=128)
    G = p.tensor("G", (256, 256), "float32")
    H = p.tensor("H", (256, 256), "float32")
    x = p.alloc_fragment("x", (32, 32), "float32")
    s = p.alloc_fragment("s", (32,), "float32")
    y = p.alloc_fragment("y", (32, 32), "float32")
    p.copy(G[0:32, 0:32], x)
    p.reduce(x, s, dim=0, kind="sum")
    p.parallel((32, 32), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (i, j)),
                                                                     (s, lambda i, j: (i,))], compute="add")
    p.copy(y, H[0:32, 0:32])
    return p


def test_staging_does_not_overlap_a_reduction_buffer():
    """A conversion after a cross-warp reduction: the staging tile gets its own 128-byte aligned range
    after the reduction's partials, and the numbers are exact."""
    p = column_sum_bias()
    r = infer.infer_layouts(p)
    (conv,) = r.conversions
    assert (conv.buffer, conv.op) == ("s", "parallel#2")
    k = codegen.lower(p, r)
    assert [(b.name, b.size) for b in k.scoped("shared")] == [("s_red1", 128), ("s__stage2", 32)]
    assert cuda.shared_offsets(k) == {"s_red1": 0, "s__stage2": 512}
    assert cuda.smem_bytes(k) == 512 + 128
    a = (np.arange(256 * 256) % 11 - 5).astype(np.float32).reshape(256, 256)
    out = codegen.execute(p, r, {"G": a})["H"]
    t = _tiles(a, 32)
    want = t + t.sum(axis=2)[:, :, :, None]  # y[i, j] = x[i, j] + sum_k x[k, i]
    np.testing.assert_array_equal(_tiles(out, 32), want)


def test_ascend_still_refuses_a_conversion():
    from .test_codegen_ascend import gemm

    p = gemm(32, 32, 32, 32, 32, 32)
    nv = infer.infer_layouts(transpose_through(), cost_model="smem-aware")
    r = dataclasses.replace(infer.infer_layouts(p), conversions=nv.conversions)
    for fn in (codegen.lower, codegen.emit_ascend_c):
        with pytest.raises(UnsupportedError, match=r"parallel#1 reads fragment x through a layout conversion"):
            fn(p, r)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH: CUDA compile check skipped")
@pytest.mark.parametrize("make, model", [(transpose_through, "smem-aware"), (row_sum_bias, None),
                                         (column_sum_bias, None)])
def test_converted_kernels_compile_for_sm80(tmp_path, make, model):
    p = make()
    r = infer.infer_layouts(p, cost_model=model) if model else infer.infer_layouts(p)
    src = codegen.emit_cuda(p, r)
    assert "__syncthreads();" in src and "__conv" in src
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    res = subprocess.run([shutil.which("nvcc"), "-arch=sm_80", "-c", str(cu), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
