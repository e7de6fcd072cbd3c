"""layoutkit as TileLang's layout pass under load: many threads each lowering kernels inside their own
``layoutkit_inference()`` blocks (nested, raising, a thread with no block beside them, as an autotuner's or a JIT
cache's thread pool does) get every kernel's serial CUDA text, every kernel solved by layoutkit, and TileLang's
own pass factories and GEMM entry back afterwards (the very objects).

The default run is 3 threads x 5 lowerings (every way in) over 6 kernels; ``LAYOUTKIT_TILELANG_THREADS=1``
(``make test-tilelang-threads``) runs 8 threads x 50 over 10."""

import os
import threading
from contextlib import ExitStack

import pytest

from .tilelang_env import require_tilelang

tilelang = require_tilelang()

from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.frontends import tilelang as lktl  # noqa: E402
from layoutkit.frontends.tilelang import layoutkit_inference  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle

FULL = os.environ.get("LAYOUTKIT_TILELANG_THREADS") == "1"
THREADS, LOWERINGS = (8, 50) if FULL else (3, 5)
NAMES = ["gemm_64", "reduce_sum_rows", "elementwise_64", "gemm_bias_relu", "softmax_64x128", "reduce_max_cols",
         "elementwise_add_128", "gemm_128x64_bf16_fullcol", "reduce_sum_cols", "gemm_128"][:10 if FULL else 6]
"""GEMMs (through layoutkit's own ``mma.sync`` lowering), row and column reductions, elementwise kernels."""
TARGET = {"kind": "cuda", "arch": "sm_80"}
OURS, THEIRS = "layoutkit.LayoutInference", "tl.LayoutInference"


def _originals():
    import tilelang.transform as tlt
    from tilelang.tileop.gemm import registry

    from layoutkit.frontends.tilelang_gemm import MMA_IMPL

    mma = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL).impl_class
    return tlt.LayoutInference, tlt.MaterializeKernelLaunch, mma


def _lower(func) -> tuple[str, list[str]]:
    """The CUDA text of ``func`` and the layout passes that ran (the calling thread's blocks decide which)."""
    from tilelang import tvm

    seen: list[str] = []

    @tvm.ir.instrument.pass_instrument
    class Record:
        def run_after_pass(self, mod, info):
            if info.name in (OURS, THEIRS):
                seen.append(info.name)

    with tvm.transform.PassContext(instruments=[Record()]), tvm.target.Target(TARGET):
        return tilelang.lower(func, target=TARGET).kernel_source, seen


class Planned(Exception):
    """The exception a block raises on purpose after its lowering."""


def _one(name: str, k: int, funcs: dict) -> tuple[str, list[str], list]:
    """Lowering ``k`` of a thread: (CUDA text, layout passes run, the records that must each show one solve).
    The way in varies with ``k``: a plain block, nested blocks (the inner one answers; one outer block keeps
    TileLang's GEMM lowering, the inner one layoutkit's), :func:`lktl.lower`, a block that raises after
    lowering, a kernel rebuilt (new parameters, so the solve cache misses)."""
    func = K.KERNELS[name]() if k % 4 == 3 else funcs[name]
    way = k % 5
    if way == 0:
        with layoutkit_inference(fallback=False) as record:
            src, seen = _lower(func)
        return src, seen, [record]
    if way == 1:
        with layoutkit_inference(fallback=False, lower_gemm=False) as outer:
            with layoutkit_inference(fallback=False) as inner:
                src, seen = _lower(func)
            assert outer.solved == 0
        return src, seen, [inner]
    if way == 2:
        with ExitStack() as stack:  # the outer block left first
            outer = stack.enter_context(layoutkit_inference(fallback=False))
            inner_block = layoutkit_inference(fallback=False, cost_model="register-count")
            inner = inner_block.__enter__()
            src, seen = _lower(func)
        inner_block.__exit__(None, None, None)
        assert outer.solved == 0
        return src, seen, [inner]
    if way == 3:
        record = None
        try:
            with layoutkit_inference(fallback=False) as record:
                src, seen = _lower(func)
                raise Planned
        except Planned:
            pass
        return src, seen, [record]
    return lktl.lower(func, TARGET, fallback=False).kernel_source, [OURS], []


def test_threads_lowering_in_their_own_blocks_get_the_serial_text():
    before = _originals()
    funcs = {name: K.KERNELS[name]() for name in NAMES}
    serial = {}
    for name in NAMES:
        with layoutkit_inference(fallback=False) as record:
            serial[name] = _lower(funcs[name])[0]
        assert record.solved == 1 and not record.fallbacks, name
    assert _originals() == before

    failures: list[str] = []
    records: list = []
    done = [0]
    lock = threading.Lock()

    def worker(t: int) -> None:
        for k in range(LOWERINGS):
            name = NAMES[(t * 3 + k) % len(NAMES)]
            try:
                src, seen, recs = _one(name, k, funcs)
                if src != serial[name]:
                    failures.append(f"thread {t} lowering {k} ({name}): CUDA text differs from the serial one")
                if seen != [OURS]:
                    failures.append(f"thread {t} lowering {k} ({name}): layout passes {seen}")
                with lock:
                    records.extend(recs)
                    done[0] += 1
            except Exception as err:  # noqa: BLE001 - every failure of every thread is reported
                failures.append(f"thread {t} lowering {k} ({name}): {type(err).__name__}: {err}")

    def refusing_worker() -> None:
        """Typed refusals (fallback=False) raised out of blocks while the others lower."""
        for _ in range(2 if FULL else 1):
            try:
                lktl.lower(K.sparse_gemm(forced_wgmma=True), "sm_90", fallback=False)
                failures.append("the refused kernel lowered")
            except UnsupportedError:
                pass

    blockless: list = []

    def blockless_worker() -> None:
        """A thread with no block of its own meanwhile: TileLang's own pass lays its kernels out."""
        for name in NAMES[:3 if FULL else 2]:
            blockless.append((name, *_lower(funcs[name])))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    threads += [threading.Thread(target=refusing_worker), threading.Thread(target=blockless_worker)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    assert failures == []
    assert done[0] == THREADS * LOWERINGS
    assert all(r.solved == 1 and not r.fallbacks for r in records)
    assert [(name, seen) for name, _, seen in blockless] == [(name, [THEIRS]) for name in NAMES[:3 if FULL else 2]]
    assert all(src == serial[name] for name, src, _ in blockless)  # TileLang's own text is ours on these
    assert _originals() == before  # the same objects: == on functions and classes is identity
    assert all(a is b for a, b in zip(_originals(), before))
