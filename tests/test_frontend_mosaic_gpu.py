"""layoutkit as Mosaic GPU's layout-inference pass (``docs/mosaic_gpu.md``): modules built with Mosaic's own
dialect get Mosaic's attributes from layoutkit's solver, conflicts are explained by op and layout, unread ops
are refused by name, the pass swaps into Mosaic's lowering only inside its blocks, and Pallas kernels lower
through Mosaic's ``lower_mgpu_dialect`` with layouts equal to Mosaic's own.  Skipped without jax."""

import threading

import pytest

pytestmark = pytest.mark.oracle
pytest.importorskip("jax.experimental.mosaic.gpu")

import jax.experimental.mosaic.gpu as mgpu  # noqa: E402
from jax._src.interpreters import mlir as mlir_interpreter  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax._src.lib.mlir.dialects import arith, llvm, vector  # noqa: E402
from jax.experimental.mosaic.gpu import fragmented_array as fa  # noqa: E402
from jax.experimental.mosaic.gpu import layout_inference, layouts  # noqa: E402

from layoutkit.errors import LayoutConflictError, UnsupportedError  # noqa: E402
from layoutkit.frontends import mosaic_gpu, mosaic_gpu_swap  # noqa: E402
from layoutkit.frontends.mosaic_gpu import MosaicLayoutError, infer_layout  # noqa: E402


@pytest.fixture
def module():
    context = ir.Context()
    context.append_dialect_registry(mlir_interpreter.upstream_dialects)
    context.load_all_available_dialects()
    mgpu.dialect.register_dialect(context)
    with context, ir.Location.unknown():
        yield ir.Module.create()


def attr(layout):
    return layouts.to_layout_attr(layout)


def cast(x, layout):
    return mgpu.dialect.layout_cast(x, attr(layout))


def test_undefined_vector_gets_mosaics_default_strided_layout(module):
    with ir.InsertionPoint(module.body):
        ty = ir.VectorType.get((1024,), ir.BF16Type.get())
        x = llvm.mlir_undef(ty)
    infer_layout(module)
    # 8 bytes per thread: 4 bf16 elements
    assert list(x.owner.attributes["out_layouts"]) == [attr(fa.WGStridedFragLayout((1024,), 4))]
    assert "in_layouts" not in x.owner.attributes


def test_cast_propagates_through_pointwise_and_reduction(module):
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(module.body):
        x = cast(llvm.mlir_undef(ir.VectorType.get((128, 64), f32)), fa.WGMMA_LAYOUT)
        y = arith.mulf(x, x)
        acc = llvm.mlir_undef(ir.VectorType.get((128,), f32))
        red = vector.MultiDimReductionOp(vector.CombiningKind.ADD, y, acc, [1])
    infer_layout(module)
    assert list(y.owner.attributes["out_layouts"]) == [attr(fa.WGMMA_LAYOUT)]
    assert list(red.attributes["out_layouts"]) == [attr(fa.WGMMA_ROW_LAYOUT)]
    assert list(red.attributes["in_layouts"]) == [attr(fa.WGMMA_LAYOUT), attr(fa.WGMMA_ROW_LAYOUT)]


def test_conflict_names_the_op_and_the_layouts(module):
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(module.body):
        x = cast(llvm.mlir_undef(ir.VectorType.get((128, 64), f32)), fa.WGMMA_LAYOUT)
        y = arith.addf(x, x)
        cast(y, fa.TCGEN05_LAYOUT)
    with pytest.raises(MosaicLayoutError, match="user-provided layout casts are unsatisfiable") as err:
        infer_layout(module)
    assert isinstance(err.value, ValueError) and isinstance(err.value, LayoutConflictError)
    assert "mosaic_gpu.layout_cast" in str(err.value) and "TiledLayout" in str(err.value)
    assert err.value.witness is not None


def test_unread_op_is_refused_by_name(module):
    with ir.InsertionPoint(module.body):
        ty = ir.VectorType.get((128,), ir.F32Type.get())
        x = llvm.mlir_undef(ty)
        vector.FMAOp(x, x, x)
    with pytest.raises(UnsupportedError, match="does not read vector.fma"):
        infer_layout(module)


def test_the_pass_never_reaches_mosaics_solver(module, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("Mosaic's solver was called")

    monkeypatch.setattr(layout_inference, "find_assignments_for", forbidden)
    with ir.InsertionPoint(module.body):
        x = cast(llvm.mlir_undef(ir.VectorType.get((64, 8), ir.F32Type.get())), fa.WGMMA_LAYOUT)
        arith.addf(x, x)
    infer_layout(module)


def test_fuel_runs_out_with_mosaics_wording(module):
    with ir.InsertionPoint(module.body):
        x = llvm.mlir_undef(ir.VectorType.get((128,), ir.F32Type.get()))
        arith.addf(x, x)
    with pytest.raises(ValueError, match="Consider adding layout annotations"):
        infer_layout(module, fuel=0)


def test_swap_is_per_thread_and_restored():
    before = (mgpu.infer_layout, layout_inference.infer_layout)
    seen = {}

    def other_thread():
        seen["other"] = mosaic_gpu_swap.active()

    with mosaic_gpu_swap.use_layoutkit():
        assert mosaic_gpu_swap.active() and mgpu.infer_layout is not before[0]
        with mosaic_gpu_swap.use_layoutkit():
            assert mosaic_gpu_swap.open_blocks() == 2
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert seen["other"] is False
    assert (mgpu.infer_layout, layout_inference.infer_layout) == before
    assert mosaic_gpu_swap.open_blocks() == 0


def test_threads_lowering_inside_and_outside_blocks_get_their_own_pass(monkeypatch):
    """Four threads lower a Pallas kernel at once, two inside a block, two outside: each lowering runs the
    pass of its own thread, and Mosaic's functions are back (the same objects) after the last block."""
    pytest.importorskip("jax.experimental.pallas.mosaic_gpu")
    from layoutkit.testing.mosaic_pallas import KERNELS

    before = (mgpu.infer_layout, layout_inference.infer_layout)
    ran: dict[str, set[int]] = {"mosaic": set(), "layoutkit": set()}
    mosaics_solver, ours = layout_inference.find_assignments_for, mosaic_gpu.infer_layout

    def mosaic_solver(*args, **kwargs):
        ran["mosaic"].add(threading.get_ident())
        return mosaics_solver(*args, **kwargs)

    def layoutkit_pass(*args, **kwargs):
        ran["layoutkit"].add(threading.get_ident())
        return ours(*args, **kwargs)

    monkeypatch.setattr(layout_inference, "find_assignments_for", mosaic_solver)
    monkeypatch.setattr(mosaic_gpu, "infer_layout", layoutkit_pass)
    barrier = threading.Barrier(4)
    idents: dict[bool, set[int]] = {True: set(), False: set()}
    errors: list[BaseException] = []

    def worker(inside: bool) -> None:
        idents[inside].add(threading.get_ident())
        try:
            if inside:
                with mosaic_gpu_swap.use_layoutkit():
                    barrier.wait()
                    KERNELS["select"]()
            else:
                barrier.wait()
                KERNELS["select"]()
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k % 2 == 0,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert ran["layoutkit"] == idents[True] and ran["mosaic"] == idents[False]
    assert mgpu.infer_layout is before[0] and layout_inference.infer_layout is before[1]
    assert mosaic_gpu_swap.open_blocks() == 0


def test_environment_switch_is_off_by_default(monkeypatch):
    monkeypatch.delenv(mosaic_gpu_swap.ENVIRONMENT_SWITCH, raising=False)
    assert mosaic_gpu_swap.use_layoutkit_if_requested() is False
    assert mosaic_gpu_swap.open_blocks() == 0


def test_pallas_kernels_lower_through_mosaic_with_mosaics_layouts():
    pytest.importorskip("jax.experimental.pallas.mosaic_gpu")
    from layoutkit.testing.mosaic_pallas import KERNELS, differences, lower_both

    for name in ("elementwise", "select", "cast_bf16", "layer_norm", "upcast_int4_f32", "loop_carry_hinted",
                 "swizzled_copy_128_f16"):
        got = lower_both(KERNELS[name])
        mosaic, ours = got["mosaic"], got["layoutkit"]
        assert not mosaic.error and not ours.error, (name, mosaic.error, ours.error)
        assert ours.relayouts <= mosaic.relayouts
        assert differences(mosaic, ours) == []
        assert any(attrs for _, attrs in ours.ops)


def test_pass_is_deterministic(module):
    with ir.InsertionPoint(module.body):
        xs = [llvm.mlir_undef(ir.VectorType.get((256,), ir.F16Type.get())) for _ in range(3)]
        arith.addf(arith.addf(xs[0], xs[1]), xs[2])
    infer_layout(module)
    first = str(module)
    for op in module.body:
        for a in ("in_layouts", "out_layouts"):
            if a in op.attributes:
                del op.attributes[a]
    infer_layout(module)
    assert str(module) == first
    assert mosaic_gpu.DEFAULT_FUEL == 100_000


def test_pallas_lowering_inside_the_swap_uses_layoutkits_pass(monkeypatch):
    pytest.importorskip("jax.experimental.pallas.mosaic_gpu")
    from layoutkit.testing.mosaic_pallas import KERNELS

    def forbidden(*args, **kwargs):
        raise AssertionError("Mosaic's solver was called")

    monkeypatch.setattr(layout_inference, "find_assignments_for", forbidden)
    with mosaic_gpu_swap.use_layoutkit():
        lowered = KERNELS["wgmma_f16_inferred"]()
    assert "mosaic_gpu" in lowered.as_text()
    with pytest.raises(Exception, match="Mosaic's solver was called"):
        KERNELS["select"]()  # outside the block: Mosaic's own pass, which reaches its solver


# ---- JAX's own Pallas GPU kernels (docs/mosaic_gpu.md#jaxs-pallas-gpu-kernels) -----------------------------

JAX_KERNELS = {  # kernel -> (ops given layouts, relayouts), both ways, recorded with jax 0.10.2
    "hopper_matmul/grid_N3": (44, 1),
    "blackwell_matmul/1024x1024x1024": (50, 0),
    "transposed_ragged_dot/64x64x64_g2_s1": (70, 3),
    "attention/b1_h4x1_d64_q64_kv64": (62, 9),
}


@pytest.mark.parametrize("name", sorted(JAX_KERNELS))
def test_jax_pallas_kernels_lower_with_layoutkits_pass_as_with_mosaics(name):
    """JAX's kernels lowered on the CPU for sm_90a / sm_100a through Mosaic's own lowering: layoutkit's pass
    gives every op Mosaic's layouts, so no more relayouts."""
    pytest.importorskip("jax.experimental.pallas.ops.gpu.hopper_matmul_mgpu")
    from layoutkit.testing.mosaic_pallas import differences, lower_both
    from layoutkit.testing.mosaic_pallas_ops import OPS_KERNELS

    got = lower_both(OPS_KERNELS[name])
    mosaic, ours = got["mosaic"], got["layoutkit"]
    assert not mosaic.error and not ours.error, (mosaic.error, ours.error)
    laid, relayouts = JAX_KERNELS[name]
    assert (mosaic.relayouts, ours.relayouts) == (relayouts, relayouts)
    assert differences(mosaic, ours) == [] and len(ours.ops) == len(mosaic.ops)
    assert sum(1 for _, attrs in ours.ops if attrs) == laid


def test_lowering_target_is_this_threads_and_undone():
    pytest.importorskip("jax.experimental.pallas.ops.gpu.hopper_matmul_mgpu")
    import jax
    from jax.experimental.mosaic.gpu import core

    from layoutkit.testing.mosaic_pallas_ops import BLACKWELL, target

    before = jax.devices
    seen = {}
    with target(BLACKWELL):
        assert core._infer_arch() == (10, 0) and jax.devices()[0].core_count == BLACKWELL.num_cores
        t = threading.Thread(target=lambda: seen.setdefault("other", core._infer_arch()))
        t.start()
        t.join()
    assert seen["other"] == (9, 0)  # Mosaic's answer on a CPU without a target
    assert jax.devices is before and not hasattr(jax.devices()[0], "core_count")
