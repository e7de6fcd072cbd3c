"""Checks of what the codegen entry points are handed, before any lowering or execution.

Every public entry point of :mod:`layoutkit.codegen` (``lower``, ``emit``, ``emit_cuda``, ``emit_ascend_c``,
``execute``) and both executors' ``run`` call these, so a bad argument fails early with a typed error naming
the buffer, what was expected and what was found, instead of an ``IndexError`` / ``KeyError`` from deep
inside the lowering or a silently wrong result:

* :func:`check_program` / :func:`check_result`: a :class:`~layoutkit.infer.Program` and the
  :class:`~layoutkit.infer.result.InferenceResult` *of that program*: every fragment buffer an op touches has
  a :class:`~layoutkit.fragment.Fragment` whose shape is the buffer's (over at most the program's threads),
  every shared buffer a GEMM reads a non-Fragment ``Layout`` of the buffer's shape (a leading stage dim
  equal to the program's stage count allowed).  Ascend programs may pass ``result=None`` (the layouts then
  come from the program's annotations); a result given is checked the same way for the buffers it holds.
* :func:`check_arrays`: ``execute``'s arrays: no unknown names, every global tensor the program reads and
  never writes present, shapes exactly as declared; dtypes exactly the storage type on NVIDIA
  (:func:`~layoutkit.backends.nv.execute.np_dtype`: bfloat16 as ``uint16`` bit patterns), any floating type on
  Ascend (values, rounded to the buffer type as a host copy would).

Conventions: buffer names are the program's; shapes are logical (without the pipeline stage dim).

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
>>> try:
...     check_result(p, None, "lower")
... except CodegenInputError as e:
...     print(str(e).split(";")[0])
lower: expected the InferenceResult of infer_layouts(program) (a layout_map of buffer -> Layout)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import CodegenInputError, DtypeError, UnsupportedError
from ..fragment.fragment import Fragment
from ..infer.target import check_scopes, get_target
from ..scopes import REDUCER


def check_program(program, what: str) -> None:
    """Raise :class:`~layoutkit.errors.UnsupportedError` unless ``program`` is a layoutkit Program, and
    :class:`~layoutkit.errors.ScopeError` when one of its buffers lives in a scope its target does not have
    (:func:`~layoutkit.infer.target.check_scopes`).

    >>> check_program("gemm", "emit_cuda")
    Traceback (most recent call last):
    ...
    layoutkit.errors.UnsupportedError: emit_cuda: expected a layoutkit.infer.Program; found str
    """
    if not all(hasattr(program, a) for a in ("ops", "buffers", "target", "threads")) or \
            not isinstance(program.buffers, Mapping):
        raise UnsupportedError(f"{what}: expected a layoutkit.infer.Program; found {type(program).__name__}")
    check_scopes(program, what)  # a program re-targeted since it was built: its target's lowering knows no scope


def _touched(program) -> set[str]:
    """Names of the buffers any op of ``program`` reads or writes."""
    return {b for op in program.ops for b in op.buffers}


def check_result(program, result, what: str, requires_layouts: bool = True) -> None:
    """Raise :class:`CodegenInputError` unless ``result`` solves ``program`` (see the module doc).
    ``requires_layouts=False`` (a backend that lowers from the program's annotations, Ascend) accepts
    ``None``, a result without the fragments' or GEMM operands' layouts, and Fragments on plain buffers.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p, q = programs.elementwise(M=64, N=64, bM=32, bN=32), programs.elementwise(M=64, N=64, bM=64, bN=64)
    >>> check_result(p, infer_layouts(p), "execute")
    >>> try:
    ...     check_result(p, infer_layouts(q), "execute")
    ... except CodegenInputError as e:
    ...     print(e.buffer)
    A_frag
    """
    check_program(program, what)
    if result is None and not requires_layouts:
        return
    layouts = getattr(result, "layout_map", None)
    if not isinstance(layouts, Mapping):
        raise CodegenInputError(f"{what}: expected the InferenceResult of infer_layouts(program) (a layout_map of "
                                f"buffer -> Layout); found {type(result).__name__}")
    touched = _touched(program)
    gemm_reads = {op.args[k] for op in program.ops if op.kind == "gemm" for k in ("A", "B")}
    for name, buf in program.buffers.items():
        if _is_global(program, buf):
            continue
        lay = layouts.get(name)
        needed = requires_layouts and name in touched and (buf.is_fragment or name in gemm_reads)
        if lay is None:
            if needed:
                raise CodegenInputError(f"{what}: the result has no layout for {buf.scope} buffer {name} "
                                        f"{tuple(buf.shape)}; expected the result of infer_layouts on this "
                                        f"program (its layouts: {sorted(layouts)})", name)
            continue
        _check_layout(program, name, buf, lay, what, requires_layouts)


def _check_layout(program, name: str, buf, lay, what: str, plain_needs_layout: bool) -> None:
    shape = tuple(buf.shape)
    register = buf.is_fragment or buf.scope == REDUCER  # a reducer's PartialFragment is a Fragment too
    found = tuple(getattr(lay, "input_shape", ()))
    if not hasattr(lay, "input_shape"):
        raise CodegenInputError(f"{what}: the layout of {name} is a {type(lay).__name__}; expected a layoutkit "
                                "Layout or Fragment", name)
    if register and not isinstance(lay, Fragment):
        raise CodegenInputError(f"{what}: fragment {name} {shape} needs a Fragment (thread map); the result holds "
                                f"a {type(lay).__name__} {found}", name)
    if not register and isinstance(lay, Fragment) and plain_needs_layout:
        raise CodegenInputError(f"{what}: {buf.scope} buffer {name} {shape} needs a Layout; the result holds a "
                                f"Fragment {found}", name)
    stages = program.stages.get(name, 1) if isinstance(getattr(program, "stages", None), Mapping) else 1
    allowed = {shape} | ({(stages, *shape)} if not register else set())
    if found not in allowed:
        raise CodegenInputError(f"{what}: {buf.scope} buffer {name} has shape {shape}"
                                f"{f' x {stages} stages' if stages > 1 else ''}; its layout in the result has "
                                f"input shape {found}: is the result from another program?", name)
    if isinstance(lay, Fragment) and lay.thread_extent > program.threads:
        raise CodegenInputError(f"{what}: fragment {name} spans {lay.thread_extent} threads; the program runs "
                                f"{program.threads}: is the result from another program?", name)


def inputs_of(program) -> list[str]:
    """The global tensors ``program`` reads and no op writes (``execute`` needs an array for each).

    >>> from layoutkit.infer import programs
    >>> inputs_of(programs.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32))
    ['A', 'B']
    """
    written = {a.buffer for op in program.ops for a in op.accesses if a.is_write}
    written |= {op.args["dst"] for op in program.ops if isinstance(op.args.get("dst"), str)}
    written |= {op.args["C"] for op in program.ops if op.kind == "gemm"}
    return [n for n in program.buffers if _is_global(program, program.buffers[n]) and n not in written
            and n in _touched(program)]


def _is_global(program, buf) -> bool:
    # each target names its global memory (NVIDIA ``global``, Ascend ``gm``): ask the program's target
    return buf.scope == get_target(program.target).global_scope


def check_names(arrays, params: dict, inputs: list[str], what: str, where: str = "") -> None:
    """Raise :class:`CodegenInputError` unless ``arrays`` is a mapping whose names are among ``params`` (name
    -> ``(shape, dtype)``) and include every name of ``inputs``; shared by :func:`check_arrays` and the
    Ascend kernel executor.

    >>> try:
    ...     check_names({"A": 1}, {"A": ((4,), "float16"), "B": ((4,), "float16")}, ["A", "B"], "run", " of k")
    ... except CodegenInputError as e:
    ...     print(e)
    run: no array for input B (4,) float16 of k (inputs ['A', 'B']; given ['A'])
    """
    if not isinstance(arrays, Mapping):
        raise CodegenInputError(f"{what}: expected a dict of global tensor name -> array; found "
                                f"{type(arrays).__name__}")
    unknown = sorted(set(map(str, arrays)) - set(params))
    if unknown:
        raise CodegenInputError(f"{what}: arrays {unknown} are not global tensors{where}; expected some of "
                                f"{sorted(params)}", unknown[0])
    missing = [n for n in inputs if n not in arrays]
    if missing:
        shape, dtype = params[missing[0]]
        raise CodegenInputError(f"{what}: no array for input {missing[0]} {tuple(shape)} {dtype}{where} (inputs "
                                f"{inputs}; given {sorted(arrays)})", missing[0])


def check_arrays(program, arrays, storage, what: str = "execute") -> None:
    """Raise unless ``arrays`` fit ``program``'s global tensors (see the module doc); ``storage(dtype)`` is
    the executor's numpy storage type of a buffer dtype, or ``None`` for "any floating type" (Ascend).

    >>> from layoutkit.infer import programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> try:
    ...     check_arrays(p, {"A": np.zeros((64, 64), np.float32)}, lambda d: np.float16)
    ... except DtypeError as e:
    ...     print(e)
    execute: array A has dtype float32; expected float16 (the float16 buffer's storage type)
    """
    globals_ = {n: b for n, b in program.buffers.items() if _is_global(program, b)}
    check_names(arrays, {n: (b.shape, b.dtype) for n, b in globals_.items()}, inputs_of(program), what,
                " of the program")
    for name, arr in arrays.items():
        buf = globals_[name]
        if not isinstance(arr, np.ndarray):
            raise CodegenInputError(f"{what}: array {name} is a {type(arr).__name__}; expected a numpy array of "
                                    f"shape {tuple(buf.shape)}", name)
        if arr.shape != tuple(buf.shape):
            raise CodegenInputError(f"{what}: array {name} has shape {arr.shape}; expected {tuple(buf.shape)}",
                                    name)
        want = storage(buf.dtype)
        if want is None:
            if arr.dtype.kind != "f":
                raise DtypeError(f"{what}: array {name} has dtype {arr.dtype}; expected floating values for the "
                                 f"{buf.dtype} buffer")
        elif arr.dtype != np.dtype(want):
            raise DtypeError(f"{what}: array {name} has dtype {arr.dtype}; expected {np.dtype(want)} (the "
                             f"{buf.dtype} buffer's storage type)")
