"""Optional reference implementations, detected by import: pycute (CUTLASS's Python CuTe) and TileLang.

Nothing here is required: when a library is missing, :func:`load` reports
``not installed (skipped)`` and the benchmark carries on without it.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Oracle:
    name: str
    module: object | None
    version: str | None
    status: str

    @property
    def ok(self) -> bool:
        return self.module is not None


def _version(*dists: str) -> str | None:
    from importlib import metadata

    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def _import(name: str, label: str, dists: Sequence[str]) -> Oracle:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name and name.split(".")[0] == err.name.split(".")[0]:
            return Oracle(label, None, None, "not installed (skipped)")
        return Oracle(label, None, None, f"not importable: {err} (skipped)")
    except Exception as err:  # a broken install (missing shared library, ...) must not stop the run
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return Oracle(label, None, None, f"not importable: {type(err).__name__}: {first[:120]} (skipped)")
    version = getattr(module, "__version__", None) or _version(*dists)
    # TileLang + torch bring ~250,000 long-lived objects: without this every gc.collect() before a
    # measurement (harness.measure) rescans them, about 0.25 s each time.
    gc.collect()
    gc.freeze()
    return Oracle(label, module, version, "ok")


def installed_versions() -> dict[str, str]:
    """Versions of the optional packages as installed (read from package metadata, nothing imported)."""
    found = {
        "pycute (nvidia-cutlass)": _version("nvidia-cutlass", "pycute"),
        "tilelang": _version("tilelang"),
        "torch": _version("torch"),
    }
    return {name: version or "not installed" for name, version in found.items()}


def load_pycute() -> Oracle:
    return _import("pycute", "pycute", ("nvidia-cutlass", "pycute"))


def load_tilelang() -> Oracle:
    """Import TileLang with its kernel cache in a private temporary directory (removed at exit),
    unless ``TILELANG_CACHE_DIR`` is already set."""
    if "TILELANG_CACHE_DIR" not in os.environ:
        tmp = tempfile.mkdtemp(prefix="layoutkit-bench-tilelang-")
        os.environ["TILELANG_CACHE_DIR"] = tmp
        atexit.register(shutil.rmtree, tmp, True)
    oracle = _import("tilelang", "tilelang", ("tilelang",))
    if oracle.ok:
        try:
            importlib.import_module("tilelang.layout")
        except Exception as err:
            return Oracle("tilelang", None, None, f"not importable: tilelang.layout: {err} (skipped)")
    return oracle


# ---- TileLang adapters ------------------------------------------------------------------------


def _tvm():
    import tvm  # TileLang ships its own TVM; importing tilelang first puts it on the path

    return tvm


def _tir():
    tvm = _tvm()
    return getattr(tvm, "tirx", None) or tvm.tir


def tl_layout(shape: Sequence[int], fn: Callable):
    """``tilelang.layout.Layout(shape, fn)`` (fn may return a tuple)."""
    from tilelang.layout import Layout

    return Layout(list(shape), lambda *v: list(_as_tuple(fn(*v))))


def tl_full_bank_swizzle(shape: Sequence[int], dtype: str = "float16"):
    """TileLang's own ``make_full_bank_swizzled_layout`` for a shared buffer of ``shape``."""
    from tilelang.layout import make_full_bank_swizzled_layout

    buf = _tir().decl_buffer(tuple(shape), dtype, scope="shared")
    return make_full_bank_swizzled_layout(buf)


def tl_index_map(layout):
    """The layout as a TVM ``IndexMap`` (what ``map_forward_index`` builds on every call)."""
    return _tir().IndexMap(
        initial_indices=layout.get_forward_vars(), final_indices=layout.index, inverse_index_map=None
    )


def tl_output_shape(layout) -> tuple[int, ...]:
    return tuple(int(e) for e in layout.get_output_shape())


def tl_input_tensor(input_shape: Sequence[int]):
    """``arange(size)`` laid out in ``input_shape`` as a TVM tensor (int32)."""
    tvm = _tvm()
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    return make(np.arange(int(np.prod(input_shape)), dtype=np.int32).reshape(tuple(input_shape)))


def tl_map_tensor_offsets(index_map, src) -> np.ndarray:
    """Forward row-major output offsets of every input coordinate through ``IndexMap.map_tensor``
    (TVM's C++ loop over the whole domain).  ``map_tensor`` moves the element at ``x`` to
    ``f(x)``; scattering positions back gives ``offset[x]``.  Needs a bijection onto the box."""
    dst = index_map.map_tensor(src).numpy().reshape(-1)
    n = int(np.prod(src.shape))
    if dst.size != n:
        raise ValueError(f"map_tensor produced {dst.size} elements for {n} inputs (not a bijection onto the box)")
    offsets = np.empty(n, dtype=np.int64)
    offsets[dst] = np.arange(n, dtype=np.int64)
    return offsets


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
