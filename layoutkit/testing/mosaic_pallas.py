"""Pallas GPU kernels (Warpgroup semantics) lowered on a CPU with Mosaic GPU's layout pass and with layoutkit's,
their layouts compared op by op and their relayouts counted (``docs/mosaic_gpu.md#pallas-kernels``).

Lowering goes all the way through Mosaic's own ``lower_mgpu_dialect``: a layout either pass writes that
Mosaic's lowering cannot honour fails the lowering.  jax is imported inside each function.

>>> sorted(KERNELS)[:2]
['broadcast_add', 'cast_bf16']
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LAYOUT_ATTRS = ("in_layouts", "out_layouts", "in_transforms", "out_transforms", "in_tmem_layouts",
                "out_tmem_layouts")
"""The attributes a layout-inference pass writes."""


def _lower(kernel: Callable[..., None], out: Any, *args: Any) -> Any:
    import jax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import mosaic_gpu as plgpu

    params = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
    f = pl.pallas_call(kernel, out_shape=out, compiler_params=params)
    return jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",))


def _elementwise() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.exp(x_ref[...]) * 2 + y_ref[...]

    x = jnp.ones((128, 64), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x, x)


def _broadcast_add() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, b_ref: Any, o_ref: Any) -> None:
        o_ref[...] = x_ref[...] + b_ref[...][None, :]

    x, b = jnp.ones((128, 128), jnp.float32), jnp.ones((128,), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x, b)


def _iota() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(o_ref: Any) -> None:
        o_ref[...] = jax.lax.broadcasted_iota(jnp.int32, (128, 64), 1)

    return _lower(kernel, jax.ShapeDtypeStruct((128, 64), jnp.int32))


def _cast() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = (x_ref[...] * 3).astype(jnp.bfloat16)

    x = jnp.ones((256, 64), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct(x.shape, jnp.bfloat16), x)


def _select() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, o_ref: Any) -> None:
        x = x_ref[...]
        o_ref[...] = jnp.where(x > 0, x, -x)

    x = jnp.ones((64, 128), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def _row_max() -> Any:
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.max(x_ref[...], axis=1)

    x = jnp.ones((128, 128), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct((128,), x.dtype), x)


def _wgmma(dtype_name: str, transforms: bool) -> Callable[[], Any]:
    """A 64x192 WGMMA from shared memory (``transforms``: the operands' tile and swizzle given by the user;
    else left to the layout pass); 32-bit operands read B transposed, as tensor cores need."""
    def lower() -> Any:
        import jax
        import jax.numpy as jnp
        from jax.experimental import pallas as pl
        from jax.experimental.pallas import mosaic_gpu as plgpu

        dtype = jnp.dtype(dtype_name)
        rhs_transpose = dtype.itemsize != 2

        def kernel(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
            if rhs_transpose:
                b_ref = plgpu.transpose_ref(b_ref, (1, 0))

            def scope(acc_ref: Any) -> Any:
                plgpu.wgmma(acc_ref, a_ref, b_ref)
                return acc_ref[...]

            o_ref[...] = pl.run_scoped(scope, plgpu.ACC((64, 192), jnp.float32))

        elems = 8 * 128 // (8 * dtype.itemsize)
        tf = (plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(128)) if transforms else ()
        b_shape = (192, 128) if rhs_transpose else (128, 192)
        params = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
        f = pl.pallas_call(
            kernel, compiler_params=params, grid=(1, 1),
            in_specs=[plgpu.BlockSpec((64, 128), lambda i, j: (i, j), transforms=tf),
                      plgpu.BlockSpec(b_shape, lambda *i: i, transforms=tf)],
            out_specs=plgpu.BlockSpec((64, 192), lambda *i: i),
            out_shape=jax.ShapeDtypeStruct((64, 192), jnp.float32))
        a = jnp.ones((64, 128), dtype)
        b = jnp.ones(b_shape, dtype)
        return jax.jit(f).trace(a, b).lower(lowering_platforms=("cuda",))

    return lower


def _row_sum_hinted() -> Any:
    import jax
    import jax.numpy as jnp
    from jax.experimental.pallas import mosaic_gpu as plgpu

    def kernel(x_ref: Any, o_ref: Any) -> None:
        x = plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA)
        o_ref[...] = jnp.sum(x, axis=1)

    x = jnp.ones((128, 128), jnp.float32)
    return _lower(kernel, jax.ShapeDtypeStruct((128,), x.dtype), x)


def _layer_norm() -> Any:
    """Layer norm over a 256-vector (two full reductions, broadcast back)."""
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, o_ref: Any) -> None:
        x = x_ref[...]
        c = x - jnp.mean(x)
        o_ref[...] = c * jax.lax.rsqrt(jnp.mean(c * c) + 1e-5) * 2.0 + 1.0

    return _lower(kernel, jax.ShapeDtypeStruct((256,), jnp.float32), jax.ShapeDtypeStruct((256,), jnp.float32))


def _layer_norm_rows() -> Any:
    """Layer norm of each row of a 128x128 tile with a per-column scale and shift (no layout hint)."""
    import jax
    import jax.numpy as jnp

    def kernel(x_ref: Any, w_ref: Any, b_ref: Any, o_ref: Any) -> None:
        x = x_ref[...]
        c = x - jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean(c * c, axis=1, keepdims=True)
        o_ref[...] = c * jax.lax.rsqrt(var + 1e-5) * w_ref[...][None, :] + b_ref[...][None, :]

    tile, row = jax.ShapeDtypeStruct((128, 128), jnp.float32), jax.ShapeDtypeStruct((128,), jnp.float32)
    return _lower(kernel, tile, tile, row, row)


def _column_sum_hinted() -> Any:
    import jax
    import jax.numpy as jnp
    from jax.experimental.pallas import mosaic_gpu as plgpu

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.sum(plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA), axis=0)

    return _lower(kernel, jax.ShapeDtypeStruct((128,), jnp.float32), jax.ShapeDtypeStruct((128, 128), jnp.float32))


def _upcast(source: str, target: str) -> Callable[[], Any]:
    """An 8- or 4-bit tile converted up (fp8, int4 sub-byte)."""
    def lower() -> Any:
        import jax
        import jax.numpy as jnp

        def kernel(x_ref: Any, o_ref: Any) -> None:
            o_ref[...] = x_ref[...].astype(jnp.dtype(target))

        return _lower(kernel, jax.ShapeDtypeStruct((128, 128), jnp.dtype(target)),
                      jax.ShapeDtypeStruct((128, 128), jnp.dtype(source)))

    return lower


def _loop_carry(hinted: bool) -> Callable[[], Any]:
    """A ``fori_loop`` carrying a 128x64 array (``hinted``: the loop-invariant operand cast to WGMMA)."""
    def lower() -> Any:
        import jax
        import jax.numpy as jnp
        from jax.experimental.pallas import mosaic_gpu as plgpu

        def kernel(x_ref: Any, o_ref: Any) -> None:
            x = plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA) if hinted else x_ref[...]
            o_ref[...] = jax.lax.fori_loop(0, 8, lambda i, acc: acc * 0.5 + x, jnp.zeros_like(x))

        tile = jax.ShapeDtypeStruct((128, 64), jnp.float32)
        return _lower(kernel, tile, tile)

    return lower


def _swizzled_copy(swizzle: int, dtype_name: str) -> Callable[[], Any]:
    """A 64x128 block through shared memory tiled and swizzled by ``swizzle`` bytes, doubled on the way."""
    def lower() -> Any:
        import jax
        import jax.numpy as jnp
        from jax.experimental import pallas as pl
        from jax.experimental.pallas import mosaic_gpu as plgpu

        dtype = jnp.dtype(dtype_name)
        tf = (plgpu.TilingTransform((8, swizzle // dtype.itemsize)), plgpu.SwizzleTransform(swizzle))

        def kernel(x_ref: Any, o_ref: Any) -> None:
            o_ref[...] = x_ref[...] + x_ref[...]

        params = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)
        block = jax.ShapeDtypeStruct((64, 128), dtype)
        f = pl.pallas_call(kernel, compiler_params=params, grid=(1,), out_shape=block,
                           in_specs=[plgpu.BlockSpec((64, 128), lambda i: (i, 0), transforms=tf)],
                           out_specs=plgpu.BlockSpec((64, 128), lambda i: (i, 0), transforms=tf))
        return jax.jit(f).trace(block).lower(lowering_platforms=("cuda",))

    return lower


KERNELS: dict[str, Callable[[], Any]] = {
    "wgmma_f16": _wgmma("float16", True),
    "wgmma_f32_transposed": _wgmma("float32", True),
    "wgmma_f16_inferred": _wgmma("float16", False),
    "row_sum_hinted": _row_sum_hinted,
    "elementwise": _elementwise,
    "broadcast_add": _broadcast_add,
    "iota": _iota,
    "cast_bf16": _cast,
    "select": _select,
    "row_max": _row_max,
    "layer_norm": _layer_norm,
    "layer_norm_rows": _layer_norm_rows,
    "column_sum_hinted": _column_sum_hinted,
    "upcast_fp8_f32": _upcast("float8_e4m3fn", "float32"),
    "upcast_fp8_e5m2_f32": _upcast("float8_e5m2", "float32"),
    "upcast_int4_f32": _upcast("int4", "float32"),
    "upcast_int4_bf16": _upcast("int4", "bfloat16"),
    "loop_carry": _loop_carry(False),
    "loop_carry_hinted": _loop_carry(True),
    "swizzled_copy_128_f16": _swizzled_copy(128, "float16"),
    "swizzled_copy_32_f32": _swizzled_copy(32, "float32"),
}
"""Kernel name -> a function that lowers it (and so runs the layout pass)."""


@dataclass
class Lowered:
    """One kernel lowered with one pass: per op (in walk order) its layout attributes, the pass's time, the
    relayouts its layouts imply, or the error that stopped the lowering."""

    ops: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    seconds: float = 0.0
    relayouts: int = 0
    error: str = ""


def record_layouts(module: Any) -> tuple[list[tuple[str, dict[str, str]]], int]:
    """The layout attributes of every op of ``module`` (walk order) and the relayouts they imply: a layout cast
    whose in and out layouts differ, or a vector operand whose layout differs from its producer's."""
    from jax._src.lib.mlir import ir

    ops: list[tuple[str, dict[str, str]]] = []
    out_layout: dict[Any, str] = {}
    relayouts = 0

    def visit(op: Any) -> None:
        nonlocal relayouts
        attrs = {a: str(op.attributes[a]) for a in LAYOUT_ATTRS if a in op.attributes}
        ops.append((op.name, attrs))
        if "in_layouts" in op.attributes:
            ins = list(op.attributes["in_layouts"])
            vectors = [v for v in op.operands if isinstance(v.type, ir.VectorType)]
            for value, layout in zip(vectors, ins):
                if value in out_layout and out_layout[value] != str(layout):
                    relayouts += 1
            if op.name == "mosaic_gpu.layout_cast" and "out_layouts" in op.attributes and \
                    str(op.attributes["out_layouts"]) != str(op.attributes["in_layouts"]):
                relayouts += 1
        if "out_layouts" in op.attributes:
            vectors = [v for v in op.results if isinstance(v.type, ir.VectorType)]
            for value, layout in zip(vectors, list(op.attributes["out_layouts"])):
                out_layout[value] = str(layout)
        for region in op.regions:
            for block in region:
                for inner in block.operations:
                    visit(inner)

    for op in module.body:
        visit(op.operation)
    return ops, relayouts


def lower_both(lower: Callable[[], Any]) -> dict[str, Lowered]:
    """Run ``lower`` (a kernel's lowering, e.g. ``KERNELS[name]``) with Mosaic's pass and with layoutkit's
    (``{"mosaic": ..., "layoutkit": ...}``); a lowering that runs the pass on several modules (one per
    ``pallas_call``) records all of them, in order."""
    from jax.experimental.mosaic.gpu import layout_inference

    from ..frontends import mosaic_gpu
    from ..frontends.mosaic_gpu_swap import override_pass

    results: dict[str, Lowered] = {}
    for which, chosen in (("mosaic", layout_inference.infer_layout), ("layoutkit", mosaic_gpu.infer_layout)):
        got = Lowered()

        def spy(_original: Any, module: Any, *args: Any, chosen: Any = chosen, got: Lowered = got,
                **kwargs: Any) -> None:
            start = time.perf_counter()
            chosen(module, *args, **kwargs)
            got.seconds += time.perf_counter() - start
            ops, relayouts = record_layouts(module)
            got.ops += ops
            got.relayouts += relayouts

        try:
            with override_pass(spy):
                lower()
        except Exception as err:  # noqa: BLE001 - a lowering failure is a result to report
            got.error = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:300]}"
        results[which] = got
    return results


def differences(a: Lowered, b: Lowered) -> list[tuple[int, str, dict[str, str], dict[str, str]]]:
    """The ops (index, name, attributes each way) whose layout attributes differ."""
    return [(k, na, aa, ab) for k, ((na, aa), (_, ab)) in enumerate(zip(a.ops, b.ops)) if aa != ab]
