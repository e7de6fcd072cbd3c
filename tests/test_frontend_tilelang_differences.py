"""The differences from TileLang 0.1.15 left in the record of TileLang's own suite
(``tests/data/tilelang_suite.md``), each shown valid here: layoutkit's layouts are injective and
covering, TileLang lowers the kernel with them (layoutkit as its layout pass) and nvcc compiles it.

One difference is left, the 2-CTA tcgen05 TS kernel of TileLang's
``test_tilelang_language_tcgen05_sliced_operands.py`` (``C_shared``, stored to ``D[rank * 128:]``);
:func:`tests.tilelang_kernels.tma_store_runtime_row` has the same construct at sm_90 in one small
kernel.  TileLang's copy selection tries a 1-D TMA store (one bulk copy of contiguous bytes, which
needs the shared buffer row-major) only when its analyzer proves the global region in bounds; a start
computed at run time (``rank``, ``Idx[0]``) is not provable, so it takes the 2-D (descriptor) store
and swizzles the shared buffer at the free level.  layoutkit reads a global start whose value it
cannot know at 0, finds the region in bounds, picks the 1-D store and proposes no layout, so the
buffer stays row-major.  Both are layouts of one buffer TileLang then stores with a 2-D descriptor
(its lowering decides the instruction again, with the layout it is given): row-major is the
descriptor's unswizzled case, so the kernel differs only in bank conflicts of the shared writes."""

import shutil
import subprocess
from pathlib import Path

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

tilelang = require_tilelang()

from layoutkit.frontends.tilelang import lower, tilelang_inference  # noqa: E402
from layoutkit.infer import infer_layouts  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402
from .test_frontend_tilelang import assert_same  # noqa: E402

pytestmark = pytest.mark.oracle


def test_unprovable_store_start_keeps_shared_row_major_and_tilelang_honours_it(tmp_path):
    run = tilelang_inference(K.tma_store_runtime_row(), "sm_90")
    ours = infer_layouts(run.program)
    assert not run.failed
    assert sorted(run.layouts) == ["C_local", "C_shared"]
    assert_same(ours.layout_map["C_local"], run.layouts["C_local"], "C_local")
    # the one difference: TileLang's swizzle against no layout (row-major) for C_shared
    assert "C_shared" not in ours.layout_map
    theirs = run.layouts["C_shared"]
    assert theirs.input_shape == (64, 64) and theirs.prove_bijective().verdict
    offsets = theirs.linear_table().ravel()
    assert sorted(offsets.tolist()) == list(range(64 * 64))  # covering: every offset once
    assert offsets.tolist() != list(range(64 * 64))  # and not row-major: a swizzle
    # honoured: TileLang lowers it with layoutkit's layouts to a 2-D descriptor store of the unswizzled
    # buffer, and nvcc compiles the kernel
    src = lower(K.tma_store_runtime_row(), "sm_90", fallback=False).kernel_source
    assert "tl::tma_store(D_desc, (&(C_shared[0])), 0, (r * 64));" in src
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    root = Path(tilelang.__file__).resolve().parent
    cu = tmp_path / "store.cu"
    cu.write_text(src)
    cmd = ["nvcc", "-arch=sm_90a", "-std=c++17", "-w", "-c", str(cu), "-o", str(tmp_path / "store.o"),
           f"-I{root / 'src'}", f"-I{root / '3rdparty' / 'cutlass' / 'include'}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
