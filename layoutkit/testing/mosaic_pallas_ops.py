"""JAX's own Pallas GPU kernels (the ``jax.experimental.pallas.ops.gpu.*_mgpu`` entry points, Warpgroup
semantics) with the tuning configurations of JAX's tests, lowered on a CPU for a chosen GPU without running
them (``docs/mosaic_gpu.md#jaxs-pallas-gpu-kernels``).

Each entry of :data:`OPS_KERNELS` is ``jax.jit(entry).trace(*ShapeDtypeStructs).lower(lowering_platforms=
("cuda",))`` inside :func:`target`: an abstract mesh whose device reports the GPU's compute capability and SM
count, which is where Mosaic reads the architecture it lowers for (sm_90a or sm_100a) and where the Hopper
matmul reads its SM count.  The kernels that ask ``jax.devices()``, ``jax.local_devices()`` or
``jax.extend.backend.get_default_device()`` for the SM count see the same numbers on the CPU device, and the
attention kernel, which asks JAX's CUDA plugin for the CUDA runtime version, gets the target's
(:class:`~layoutkit.frontends.interpose.Interposer` overrides, this thread only, undone on leaving).  The
collectives run in a ``shard_map`` over the mesh's axis ``"x"``.  jax is imported inside each function.

>>> len(OPS_KERNELS), min(OPS_KERNELS)
(75, 'all_gather/b132_t8192_d0_add')
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from ..frontends.interpose import Interposer, attribute_patch

SMEM_BYTES = 228_000
"""The shared memory JAX's tests allow a configuration (an H100's); larger ones are skipped there and here."""


@dataclass(frozen=True)
class TargetDevice:
    """The device an abstract mesh names for the lowering: what Mosaic and the kernels read of it."""

    compute_capability: str
    num_cores: int
    device_kind: str = "NVIDIA GPU"
    platform: str = "cuda"
    cuda_runtime: int = 12091  # CUDA 12.9.1: JAX's FlashAttention refuses causal masks on 12.8.0 - 12.9.0

    def _repr(self) -> str:  # JAX's AbstractMesh prints its device through this
        return f"device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform}"


HOPPER = TargetDevice("9.0", 132, "NVIDIA H100")
BLACKWELL = TargetDevice("10.0", 148, "NVIDIA B200")


class _WithCores:
    """A JAX device seen with the target's SM count (``core_count``); everything else is the device's own."""

    def __init__(self, device: Any, cores: int):
        self._device, self.core_count = device, cores

    def __getattr__(self, name: str) -> Any:
        return getattr(self._device, name)


class _CudaVersions:
    """Stands in for JAX's CUDA plugin module (absent without a GPU) where the attention kernel reads the CUDA
    runtime version: the calling thread's target answers; a thread without one gets the plugin's own answer
    (with no plugin, the error reading from None gives)."""

    def __init__(self, current: Callable[[], TargetDevice | None], original: Any):
        self._current, self._original = current, original

    def cuda_runtime_get_version(self) -> int:
        device = self._current()
        return self._original.cuda_runtime_get_version() if device is None else device.cuda_runtime


def _patch_cuda_versions(current: Callable[[], TargetDevice | None]) -> Callable[[], None]:
    from jax.experimental.pallas.ops.gpu import attention_mgpu

    original = attention_mgpu.cuda_versions
    attention_mgpu.cuda_versions = _CudaVersions(current, original)
    return lambda: setattr(attention_mgpu, "cuda_versions", original)


_CUDA_VERSIONS: Interposer[TargetDevice] = Interposer("attention_mgpu.cuda_versions", _patch_cuda_versions)
_DEVICE_QUERIES: tuple[Interposer[Callable[..., Any]], ...] = tuple(
    Interposer(f"{owner}.{name}", attribute_patch(owner, name))
    for owner, name in (("jax", "devices"), ("jax", "local_devices"), ("jax.extend.backend", "get_default_device")))


@contextmanager
def target(device: TargetDevice, devices: int = 1) -> Iterator[Any]:
    """Within the block (this thread), JAX lowers Mosaic GPU kernels for ``device``; yields the abstract mesh
    (one axis ``"x"`` of ``devices`` devices, for the collectives' ``shard_map``)."""
    import jax

    def with_cores(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        got = original(*args, **kwargs)
        if isinstance(got, list):
            return [_WithCores(d, device.num_cores) for d in got]
        return _WithCores(got, device.num_cores)

    mesh = jax.sharding.AbstractMesh((devices,), ("x",), abstract_device=device)
    with ExitStack() as stack:
        for hook in _DEVICE_QUERIES:
            stack.enter_context(hook.override(with_cores))
        stack.enter_context(_CUDA_VERSIONS.override(device))
        stack.enter_context(jax.sharding.use_abstract_mesh(mesh))
        yield mesh


def _lower(device: TargetDevice, entry: Callable[..., Any], *args: Any) -> Any:
    import jax

    with target(device):
        return jax.jit(entry).trace(*args).lower(lowering_platforms=("cuda",))


def _sds(shape: tuple[int, ...], dtype: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))


# ---- Hopper matmuls (sm_90a) -------------------------------------------------------------------------------

def _hopper_matmul(tile_m: int, tile_n: int, tile_k: int, steps: int, epi: int | None, wg: str,
                   c_dtype: str | None = None, **extra: Any) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import hopper_matmul_mgpu as hm

        dim = hm.MatmulDimension
        config = hm.TuningConfig(tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, max_concurrent_steps=steps,
                                 epi_tile_m=epi, epi_tile_n=epi, wg_dimension=dim[wg],
                                 **{k: dim[v] if k.endswith("_dimension") or k == "grid_minor_dim" else v
                                    for k, v in extra.items()})
        ab = _sds((4096, 4096), "float16")
        if c_dtype is None:
            return _lower(HOPPER, lambda a, b: hm.matmul(a, b, None, config), ab, ab)
        return _lower(HOPPER, lambda a, b, c: hm.matmul(a, b, c, config), ab, ab, _sds((4096, 4096), c_dtype))

    return lower


def _hopper_fits(tile_m: int, tile_n: int, tile_k: int, steps: int, epi: int | None, wg: str,
                 bits: tuple[int, int, int] = (16, 16, 16)) -> bool:
    cta_m, cta_n = tile_m * (1 + (wg == "M")), tile_n * (1 + (wg == "N"))
    epi_size = (epi or tile_m) * (epi or tile_n)
    out = 2 * min(2, tile_m * tile_n // epi_size) * epi_size * bits[2] // 8
    return steps * (cta_m * tile_k * bits[0] + tile_k * cta_n * bits[1]) // 8 + out <= SMEM_BYTES


def _mixed_matmul(tile_m: int, tile_n: int, tile_k: int, steps: int, epi: int | None, wg: str, rhs: str,
                  **extra: Any) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import hopper_mixed_type_matmul_mgpu as mm

        dim = mm.MatmulDimension
        config = mm.TuningConfig(tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, max_concurrent_steps=steps,
                                 epi_tile_m=epi, epi_tile_n=epi, wg_dimension=dim[wg],
                                 **{k: dim[v] if k.endswith("_dimension") or k == "grid_minor_dim" else v
                                    for k, v in extra.items()})
        import jax.numpy as jnp

        return _lower(HOPPER, lambda a, b: mm.mixed_matmul_kernel(a, b, out_dtype=jnp.dtype(rhs), config=config),
                      _sds((4096, 4096), "int8"), _sds((4096, 4096), rhs))

    return lower


# ---- ragged dots -------------------------------------------------------------------------------------------

_RAGGED = (16 * 1024, 2048, 16 * 1024)  # m, k, n of JAX's ragged dot tests


def _ragged_dot(bm: int, bn: int, bk: int, grid_n: int, steps: int, groups: int, transpose: bool
                ) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import ragged_dot_mgpu as rd

        m, k, n = _RAGGED
        rhs = (groups, n, k) if transpose else (groups, k, n)

        def entry(lhs: Any, rhs: Any, sizes: Any) -> Any:
            return rd.ragged_dot(lhs, rhs, group_sizes=sizes, block_m=bm, block_n=bn, block_k=bk,
                                 max_concurrent_steps=steps, grid_block_n=grid_n, transpose_rhs=transpose)

        return _lower(HOPPER, entry, _sds((m, k), "float16"), _sds(rhs, "float16"), _sds((groups,), "int32"))

    return lower


def _transposed_ragged_dot(bm: int, bn: int, bk: int, grid_n: int, steps: int) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import transposed_ragged_dot_mgpu as td

        k, m, n, groups = 16 * 1024, 2048, 2048, 16

        def entry(lhs: Any, rhs: Any, sizes: Any) -> Any:
            return td.transposed_ragged_dot(lhs, rhs, group_sizes=sizes, block_m=bm, block_n=bn, block_k=bk,
                                            max_concurrent_steps=steps, grid_block_n=grid_n)

        return _lower(HOPPER, entry, _sds((k, m), "float16"), _sds((k, n), "float16"), _sds((groups,), "int32"))

    return lower


def _blackwell_ragged_dot(width: int, minor: int, steps: int, groups: int, tile_k: int) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import blackwell_matmul_mgpu as bm
        from jax.experimental.pallas.ops.gpu import blackwell_ragged_dot_mgpu as brd

        m, k, n = _RAGGED
        config = brd.TuningConfig(tile_m=128, tile_n=128, tile_k=tile_k, grid_tile_width=width,
                                  grid_minor_dim=bm.MatmulDimension(minor), max_concurrent_steps=steps,
                                  collective=True)
        return _lower(BLACKWELL, lambda a, b, g: brd.ragged_dot_kernel(a, b, group_sizes=g, config=config),
                      _sds((m, k), "float16"), _sds((groups, k, n), "float16"), _sds((groups,), "int32"))

    return lower


# ---- Blackwell matmul (sm_100a) ----------------------------------------------------------------------------

def _blackwell_matmul(m: int, n: int, k: int, collective: bool = False) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import blackwell_matmul_mgpu as bm

        config = bm.TuningConfig(tile_m=128, tile_n=128, tile_k=128, max_concurrent_steps=2,
                                 collective=collective)
        return _lower(BLACKWELL, lambda a, b: bm.matmul_kernel(a, b, config),
                      _sds((m, k), "float16"), _sds((k, n), "float16"))

    return lower


# ---- FlashAttention 3 (warp-specialised, sm_90a) -----------------------------------------------------------

def _attention(batch: int, heads: tuple[int, int], head_dim: int, blocks: tuple[int, int]) -> Callable[[], Any]:
    def lower() -> Any:
        from jax.experimental.pallas.ops.gpu import attention_mgpu as am

        config = am.TuningConfig(block_q=blocks[0], block_kv=blocks[1], max_concurrent_steps=2)
        q = _sds((batch, 4096, heads[0], head_dim), "float16")
        kv = _sds((batch, 4096, heads[1], head_dim), "float16")
        return _lower(HOPPER, lambda q, k, v: am.attention_with_pipeline_emitter(q, k, v, config,
                                                                                 save_residuals=True), q, kv, kv)

    return lower


# ---- collectives (sm_90a; multimem all-gather / reduce-scatter, all-gather + matmul) -----------------------

def _collective_matmul(m_shard: int, n_shard: int, tile_m: int, tile_n: int, tile_k: int, steps: int
                       ) -> Callable[[], Any]:
    """JAX's all-gather-LHS matmul over an axis of all of JAX's devices (the kernel requires it: one on a
    CPU)."""
    def lower() -> Any:
        import jax
        from jax.experimental.pallas.ops.gpu import collective_matmul_mgpu as cm
        from jax.sharding import PartitionSpec as P

        n, dim = jax.device_count(), cm.MatmulDimension
        config = cm.TuningConfig(tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, max_concurrent_steps=steps,
                                 grid_minor_dim=dim.N, grid_tile_width=1, wg_dimension=dim.N)

        def body(a: Any, b: Any) -> Any:
            return cm.all_gather_lhs_matmul(a, b, "x", config=config, dtype=jax.numpy.bfloat16)

        with target(HOPPER, n) as mesh:
            f = jax.shard_map(body, mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x"),
                              check_vma=False)
            return jax.jit(f).trace(_sds((n * m_shard, 4096), "bfloat16"), _sds((4096, n * n_shard), "bfloat16")
                                    ).lower(lowering_platforms=("cuda",))

    return lower


def _multimem(which: str, devices: int, blocks: int, tile: int, dim: int, reduction: str = "add"
              ) -> Callable[[], Any]:
    """JAX's multimem all-gather / reduce-scatter of a (4 * 4096)^2 bf16 array over ``devices`` devices."""
    def lower() -> Any:
        import jax
        from jax.experimental.pallas.ops.gpu import all_gather_mgpu, reduce_scatter_mgpu
        from jax.sharding import PartitionSpec as P

        def body(x: Any) -> Any:
            if which == "all_gather":
                return all_gather_mgpu.all_gather(x, axis_name="x", gather_dimension=dim, num_blocks=blocks,
                                                  tile_size=tile)
            return reduce_scatter_mgpu.reduce_scatter(x, axis_name="x", scatter_dimension=dim,
                                                      reduction=reduction,
                                                      num_blocks=blocks, tile_size=tile)

        with target(HOPPER, devices) as mesh:
            f = jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None), check_vma=False)
            return jax.jit(f).trace(_sds((4 * 4096, 4 * 4096), "bfloat16")).lower(lowering_platforms=("cuda",))

    return lower


def _kernels() -> dict[str, Callable[[], Any]]:
    kernels: dict[str, Callable[[], Any]] = {}
    # Hopper matmul: a covering sample of JAX's product (every value of every parameter), the grid tilings
    # and the clusters.
    product = [c for c in itertools.product((64, 128), (64, 128), (64, 128), (2, 4), (None, 64), ("M", "N"),
                                            (None, "float32")) if _hopper_fits(*c[:6])]
    for tm, tn, tk, steps, epi, wg, c in product[::9]:
        kernels[f"hopper_matmul/{tm}x{tn}x{tk}_s{steps}_epi{epi}_wg{wg}_c{c}"] = \
            _hopper_matmul(tm, tn, tk, steps, epi, wg, c)
    for minor, width in itertools.product(("M", "N"), (1, 3, 4)):
        kernels[f"hopper_matmul/grid_{minor}{width}"] = _hopper_matmul(64, 64, 64, 2, 64, "M", grid_minor_dim=minor,
                                                                       grid_tile_width=width)
    for tm, tn, wg, cluster in list(itertools.product((64, 128), (64, 128), ("M", "N"), ("M", "N")))[::3]:
        kernels[f"hopper_matmul/cluster_{tm}x{tn}_wg{wg}_c{cluster}"] = \
            _hopper_matmul(tm, tn, 64, 4, 64, wg, cluster_dimension=cluster)
    # mixed-type matmul: int8 x bf16 / f16
    mixed = [c for c in itertools.product((64, 128), (64, 128, 256), (64, 128), (None, 64), (2, 4), ("M", "N"),
                                          ("bfloat16", "float16"))
             if _hopper_fits(c[0], c[1], c[2], c[4], c[3], c[5], (8, 16, 16))]
    for tm, tn, tk, epi, steps, wg, rhs in mixed[::17]:
        kernels[f"mixed_matmul/{tm}x{tn}x{tk}_s{steps}_epi{epi}_wg{wg}_{rhs}"] = \
            _mixed_matmul(tm, tn, tk, steps, epi, wg, rhs)
    for minor, width in (("M", 1), ("N", 4)):
        kernels[f"mixed_matmul/grid_{minor}{width}"] = _mixed_matmul(64, 64, 64, 2, 64, "M", "float16",
                                                                     grid_minor_dim=minor, grid_tile_width=width)
    # ragged dots
    ragged = [c for c in itertools.product((64, 128), (64, 128, 192), (64, 128), (2, 4), (2, 4), (1, 3, 16),
                                           (False, True))
              if (c[0] + c[1]) * c[2] * c[4] * 2 <= SMEM_BYTES]
    for bm, bn, bk, grid_n, steps, groups, tr in ragged[::23]:
        kernels[f"ragged_dot/{bm}x{bn}x{bk}_g{grid_n}_s{steps}_n{groups}{'_tr' if tr else ''}"] = \
            _ragged_dot(bm, bn, bk, grid_n, steps, groups, tr)
    for bm, bn, bk, grid_n, steps in ((64, 64, 64, 2, 1), (128, 128, 64, 4, 2), (64, 128, 128, 2, 4)):
        kernels[f"transposed_ragged_dot/{bm}x{bn}x{bk}_g{grid_n}_s{steps}"] = \
            _transposed_ragged_dot(bm, bn, bk, grid_n, steps)
    blackwell_ragged = list(itertools.product((1, 8, 16), (0, 1), (2, 4), (1, 3, 16), (64, 128)))
    for width, minor_dim, steps, groups, tk in blackwell_ragged[::13]:
        kernels[f"blackwell_ragged_dot/w{width}_m{minor_dim}_s{steps}_n{groups}_k{tk}"] = \
            _blackwell_ragged_dot(width, minor_dim, steps, groups, tk)
    for m, n, k in ((1024, 1024, 1024), (4096, 1024, 4096), (4096, 4096, 4096)):
        kernels[f"blackwell_matmul/{m}x{n}x{k}"] = _blackwell_matmul(m, n, k)
    # attention: JAX's pipeline-emitter FlashAttention (Warpgroup semantics; its other implementation,
    # forward and backward, lowers with Lane semantics, where Mosaic runs no layout pass)
    attention = [c for c in itertools.product((1, 4), ((4, 1), (6, 3), (4, 4)), (64, 128, 256),
                                              ((64, 64), (64, 128), (128, 64)))
                 if not (c[2] >= 256 and max(c[3]) >= 128)]
    for batch, heads, dim, blocks in attention[::3]:
        kernels[f"attention/b{batch}_h{heads[0]}x{heads[1]}_d{dim}_q{blocks[0]}_kv{blocks[1]}"] = \
            _attention(batch, heads, dim, blocks)
    for tm, tn, tk, steps, n_shard in list(itertools.product((64, 128, 192), (64, 128, 192), (64, 128), (2, 4),
                                                             (256, 576)))[::7]:
        if 3072 % tm or n_shard % (2 * tn) or \
                ((tm + 2 * tn) * tk * steps + 2 * min(2, tm * tn // 4096) * 4096) * 2 > SMEM_BYTES:
            continue
        kernels[f"collective_matmul/{tm}x{tn}x{tk}_s{steps}_n{n_shard}"] = \
            _collective_matmul(3072, n_shard, tm, tn, tk, steps)
    for which, num_blocks, tile, dim, reduction in (("all_gather", 32, 4096, 0, "add"),
                                                ("all_gather", 132, 8192, 0, "add"),
                                                ("reduce_scatter", 16, 2048, 1, "add"),
                                                ("reduce_scatter", 64, 4096, 1, "max")):
        kernels[f"{which}/b{num_blocks}_t{tile}_d{dim}_{reduction}"] = \
            _multimem(which, 8, num_blocks, tile, dim, reduction)
    return kernels


OPS_KERNELS: dict[str, Callable[[], Any]] = _kernels()
"""``family/config`` -> a function that lowers JAX's kernel with that configuration (running the layout pass
once per ``pallas_call``)."""
