#!/usr/bin/env python
"""Run layoutkit's TileLang adapter over the kernels of a TileLang checkout (its ``examples/`` and
``testing/python/``) and compare each with TileLang 0.1.15's own LayoutInference, table for table.

Nothing of TileLang's is copied here: the kernels are constructed at test time from the checkout
given by ``--src`` (or the ``TILELANG_SRC`` environment variable).  Each file runs in its own
process: an example's ``__main__`` block, or each ``test_*`` function of a test file that takes no
arguments.  TileLang's lowering entry (``tilelang.engine.lower``'s semantic check, which
``tilelang.lower``, ``tilelang.compile`` and ``@tilelang.jit`` all pass) is hooked to capture the
first kernel a run builds and stop it there, so no GPU is needed; torch tensors asked for on
``cuda`` are made on the CPU, and device queries (``torch.cuda.get_device_capability`` /
``get_device_properties``, TileLang's ``driver.get_num_sms``, ``target="auto"``) answer what an A100
answers (an autotuner's first candidate kernel is the one captured).  A file written for Hopper (its
name says ``hopper`` / ``sm90``), or whose sm_80 run stops on a Hopper requirement (compute capability
>= 9.0, TMA, WGMMA), is built again answering as an H100 with target sm_90 (its rows carry
``"arch": "sm_90"``; nvcc then compiles for sm_90a).  A file written for Blackwell (its path says
``tcgen`` / ``tmem`` / ``sm100`` / ``blackwell``), or whose sm_80 rows stop on tensor memory or TCGEN05, is
built answering as a B200 with target sm_100 (``"arch": "sm_100"``, nvcc sm_100a).  Each captured kernel
gets one status:

- ``equal``: TileLang solves it, layoutkit reads and solves it, every buffer and loop layout has
  the same tables;
- ``differ``: both solve, some tables differ (listed);
- ``refused``: the adapter refuses it with a typed error (``layoutkit.errors``; the message names the
  construct);
- ``solver``: the adapter reads it, layoutkit's inference refuses it;
- ``tilelang-fails`` / ``both-fail``: TileLang's pass fails (and layoutkit solves / does not);
  ``tilelang-fails`` also when TileLang's lowering fails before reaching its pass (nothing to compare);
- ``crash``: an untyped exception from layoutkit (a bug by definition);
- and, with no kernel, ``no-kernel`` (the run ended or failed before building one: the reason).

With ``--compile`` every kernel both solve (``equal`` or ``differ``) is then lowered by TileLang's
pipeline with layoutkit *as* its layout-inference pass (no fallback to TileLang's own) and the CUDA
source compiled with nvcc for the pass's arch: the row gets ``compiled`` (``ok`` or the first error line;
``tilelang-fails-too`` where ``tilelang.lower`` alone and nvcc fail on the kernel as well).  The
lowering uses layoutkit's ``T.gemm`` lowering too, and must give the CUDA text TileLang's GEMM
lowering gives over the same layouts.  ``--gemm-text`` checks only that (no nvcc): the row gets
``gemm_text`` (``same``, ``same, no mma.sync`` for a kernel without an MMA GEMM, ``differs``, the
lowering's failure, or ``varies`` where TileLang's own text differs between two lowerings: then each
GEMM's statement is compared instead, both lowered from the same node).

    python tools/tilelang_suite.py --src CHECKOUT [--only SUBSTRING ...] [--compile | --gemm-text] [--out results.json]
                                   [--markdown list.md] [--log STDERR_DIR]

Each row also gives ``seconds``: ``build`` (the example up to its kernel), ``read`` (TileLang's pass
and the adapter's reading), ``solve`` (layoutkit's inference).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling torch_on_cpu
from torch_on_cpu import tensors_on_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MARK = "SUITE-RESULT:"
CUDA_FACTORIES = ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor", "randn_like",
                  "zeros_like", "ones_like", "empty_like", "rand_like", "full_like", "eye", "linspace", "randperm",
                  "empty_strided", "as_tensor", "randint_like", "normal", "logspace", "tril_indices", "triu_indices")


COMPILE = os.environ.get("LAYOUTKIT_SUITE_COMPILE") == "1"
GEMM_TEXT = os.environ.get("LAYOUTKIT_SUITE_GEMM_TEXT") == "1"
"""Set in each child by ``--compile``: lower and nvcc-compile every kernel both solve."""

ARCH = "sm_80"
_SECONDS: dict = {}
"""Where a child's time went for its last kernel: ``build`` (the example up to the kernel), ``read``
(TileLang's pass and the adapter's reading), ``solve`` (layoutkit's inference)."""
"""The child's pass (``--arch``): the target kernels are captured, solved, lowered and compiled for."""


class _Captured(Exception):
    """Raised inside TileLang's lowering once the kernel is captured."""


DEVICES = {
    "sm_80": {"name": "NVIDIA A100-SXM4-80GB", "major": 8, "minor": 0, "multi_processor_count": 108,
              "total_memory": 81920 << 20, "shared_memory_per_block": 49152,
              "shared_memory_per_block_optin": 166912, "shared_memory_per_multiprocessor": 167936,
              "regs_per_multiprocessor": 65536, "max_threads_per_multi_processor": 2048, "warp_size": 32,
              "L2_cache_size": 40 << 20, "is_integrated": 0, "is_multi_gpu_board": 0},
    "sm_90": {"name": "NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "multi_processor_count": 132,
              "total_memory": 81559 << 20, "shared_memory_per_block": 49152,
              "shared_memory_per_block_optin": 232448, "shared_memory_per_multiprocessor": 233472,
              "regs_per_multiprocessor": 65536, "max_threads_per_multi_processor": 2048, "warp_size": 32,
              "L2_cache_size": 50 << 20, "is_integrated": 0, "is_multi_gpu_board": 0},
    "sm_100": {"name": "NVIDIA B200", "major": 10, "minor": 0, "multi_processor_count": 148,
               "total_memory": 183359 << 20, "shared_memory_per_block": 49152,
               "shared_memory_per_block_optin": 232448, "shared_memory_per_multiprocessor": 233472,
               "regs_per_multiprocessor": 65536, "max_threads_per_multi_processor": 2048, "warp_size": 32,
               "L2_cache_size": 126 << 20, "is_integrated": 0, "is_multi_gpu_board": 0},
}
"""What ``torch.cuda`` answers in a child: an A100 for the sm_80 pass, an H100 for the sm_90 one, a B200
for the sm_100 one."""

NVCC_ARCH = {"sm_80": "sm_80", "sm_90": "sm_90a", "sm_100": "sm_100a"}
"""nvcc's architecture per pass (wgmma and setmaxnreg need the arch-specific sm_90a)."""


def nvcc_arch_flags(arch: str) -> list[str]:
    """nvcc's flags for the pass ``arch``: an explicit ``-gencode`` pair, as TileLang compiles (a plain
    ``-arch=sm_90a`` goes through an sm_90 PTX pass, where ``__CUDA_ARCH_SPECIFIC__`` is unset and
    TileLang's templates refuse setmaxnreg).

    >>> nvcc_arch_flags("sm_90")
    ['-gencode', 'arch=compute_90a,code=sm_90a']
    """
    code = NVCC_ARCH[arch]
    return ["-gencode", f"arch=compute_{code.removeprefix('sm_')},code={code}"]

HOPPER_SIGNS = ("compute capability >= 9", "requires tma-capable target", "only supports hopper", "requires hopper",
                "sm90 or newer", "sm_90 or newer", "requires sm_90", "wgmma requires", "hopper only")
"""Failures at sm_80 that say the kernel needs a Hopper GPU (matched lower-case): such a file is run again
with an H100's answers and target sm_90."""


def first_arch(rel: str) -> str:
    """The pass a file is run in first: ``sm_100`` where its path says it is written for Blackwell,
    ``sm_90`` where its name says Hopper.

    >>> first_arch("examples/deepseek_v4/sparse_attn_fwd_sm90.py"), first_arch("examples/gemm/example_gemm.py")
    ('sm_90', 'sm_80')
    >>> first_arch("testing/python/language/test_tilelang_language_tmem_copy.py")
    'sm_100'
    """
    name = Path(rel).name.lower()
    if any(s in rel.lower() for s in BLACKWELL_NAMES):
        return "sm_100"
    return "sm_90" if any(s in name for s in ("hopper", "sm90", "sm_90", "wgmma")) else "sm_80"


BLACKWELL_NAMES = ("blackwell", "sm100", "sm_100", "tcgen", "tmem")
"""Words in a file's path that say it is written for Blackwell (tensor memory, TCGEN05): run at sm_100."""
BLACKWELL_SIGNS = ("shared.tmem", "tcgen05", "tcgen5", "compute capability >= 10", "requires blackwell")
"""Words of an sm_80 row's reason that send the file to the sm_100 pass (a tensor-memory kernel)."""


def needs_blackwell(rows: list[dict]) -> bool:
    """Whether a file's sm_80 rows show it needs a Blackwell GPU (tensor memory, TCGEN05).

    >>> needs_blackwell([{"status": "refused", "why": "scope 'shared.tmem' is Blackwell tensor memory"}])
    True
    """
    return any(r["status"] != "equal" and any(s in str(r.get("why", "")).lower() for s in BLACKWELL_SIGNS)
               for r in rows)


def needs_hopper(rows: list[dict]) -> bool:
    """Whether a file's sm_80 rows show it needs a Hopper GPU: some kernel was not built, or TileLang
    refused it, for a reason that names compute capability 9.0, TMA or WGMMA.

    >>> needs_hopper([{"status": "no-kernel", "why": "AssertionError: needs compute capability >= 9.0"}])
    True
    >>> needs_hopper([{"status": "equal", "buffers": 3}, {"status": "no-kernel", "why": "No module named 'fla'"}])
    False
    """
    return any(r["status"] in ("no-kernel", "tilelang-fails", "both-fail")
               and any(sign in str(r.get("why", "")).lower() for sign in HOPPER_SIGNS) for r in rows)


def merge_passes(first: list[dict], second: list[dict]) -> list[dict]:
    """The sm_80 rows with each Hopper-needing row replaced by the sm_90 row built at the same place
    (a row the sm_90 pass did not reach is kept as it was).

    >>> a = [{"where": "f::t1", "status": "equal"},
    ...      {"where": "f::t2", "status": "no-kernel", "why": "compute capability >= 9.0"}]
    >>> b = [{"where": "f::t2", "status": "equal", "arch": "sm_90"}]
    >>> [r["status"] + "@" + r.get("arch", "sm_80") for r in merge_passes(a, b)]
    ['equal@sm_80', 'equal@sm_90']
    """
    again = {r["where"]: r for r in second}
    if len(first) == 1 and first[0]["status"] == "no-kernel" and needs_hopper(first):
        return second or first  # the whole file stopped before its first kernel: the sm_90 pass answers for it
    return [again.get(r["where"], r) if needs_hopper([r]) else r for r in first]


def _cpu_torch(arch: str = "sm_80") -> None:
    """Tensors requested on ``cuda`` are made on the CPU (kernels are only built, never run), and the
    device queries answer what the pass's GPU (:data:`DEVICES`) answers."""
    try:
        import torch
    except ImportError:
        return
    device = DEVICES[arch]

    tensors_on_cpu(torch, CUDA_FACTORIES)
    torch.cuda.is_available = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.manual_seed = torch.cuda.manual_seed_all = lambda *a, **k: None
    # torch.random.fork_rng(devices=[...]) saves and restores the device generators' states
    torch.cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    torch.cuda.set_rng_state = lambda *a, **k: None
    # examples pick their configuration (tile sizes, persistent grids, Hopper paths) from these
    torch.cuda.get_device_capability = lambda *a, **k: (device["major"], device["minor"])
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda *a, **k: None  # the autotuner's compile workers pin the one device
    torch.cuda.device = lambda *a, **k: contextlib.nullcontext()
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_name = lambda *a, **k: device["name"]
    torch.cuda.get_device_properties = lambda *a, **k: type("DeviceProperties", (), dict(device))()


def _compare(func) -> dict:
    """The status of one captured kernel (see the module docstring)."""
    from layoutkit.errors import LayoutError
    from layoutkit.frontends.tilelang import (
        TileLangLoweringError,
        check_selections,
        tilelang_error,
        tilelang_inference,
    )
    from layoutkit.infer import infer_layouts
    from layoutkit.testing.assertions import same_tables

    t0 = time.perf_counter()
    try:
        run = tilelang_inference(func, ARCH)
    except LayoutError as err:  # any typed refusal of the adapter (an unsupported construct, dtype, shape)
        if isinstance(err, TileLangLoweringError):  # TileLang's own passes before LayoutInference fail
            return {"status": "tilelang-fails", "why": str(err)[:400]}
        why = f"{type(err).__name__}: {str(err)[:400]}"
        theirs = tilelang_error(func, ARCH)  # a kernel TileLang cannot lay out either is no kernel it solves
        if theirs is not None:
            return {"status": "both-fail", "why": f"{why[:300]} (TileLang's pass: {theirs[:200]})"}
        return {"status": "refused", "why": why}
    except Exception as err:  # noqa: BLE001 - an untyped exception is the finding
        return {"status": "crash", "why": f"{type(err).__name__}: {str(err)[:400]}"}
    t1 = time.perf_counter()
    try:
        ours = infer_layouts(run.program)
        check_selections(run.selections, ours.layout_map)
    except LayoutError as err:
        return {"status": "both-fail" if run.failed else "solver", "why": f"{type(err).__name__}: {str(err)[:300]}"}
    except Exception as err:  # noqa: BLE001
        return {"status": "crash", "why": f"{type(err).__name__}: {str(err)[:400]}"}
    _SECONDS.update(read=round(t1 - t0, 2), solve=round(time.perf_counter() - t1, 2))
    if run.failed:
        return {"status": "tilelang-fails", "why": run.error}
    differ = [name for name, theirs in run.layouts.items()
              if name in ours.layout_map and not same_tables(ours.layout_map[name], theirs)]
    differ += [op for op, theirs in run.loop_layouts.items()
               if op in ours.loop_layouts and not same_tables(ours.loop_layouts[op], theirs)]
    missing = [name for name in run.layouts if name not in ours.layout_map]
    if differ or missing:
        return {"status": "differ", "differ": differ, "missing": missing}
    return {"status": "equal", "buffers": len(run.layouts), "loops": len(run.loop_layouts)}




def _include_dirs() -> list[str]:
    """TileLang's CUDA templates and the CUTLASS headers its kernels include, from the installed package."""
    import tilelang

    root = Path(tilelang.__file__).resolve().parent
    return [str(root / "src"), str(root / "3rdparty" / "cutlass" / "include")]


def _tvm_target() -> dict:
    """The TileLang target of the pass (what ``target="auto"`` finds on the pass's GPU)."""
    return {"kind": "cuda", "arch": ARCH}


def _nvcc(source: str) -> str | None:
    """None when nvcc compiles the CUDA ``source`` for the pass's arch (:data:`NVCC_ARCH`); else its first
    error line."""
    with tempfile.TemporaryDirectory(prefix="layoutkit-suite-nvcc-") as tmp:
        cu = Path(tmp) / "kernel.cu"
        cu.write_text(source)
        cmd = ["nvcc", *nvcc_arch_flags(ARCH), "-std=c++17", "-w", "-c", str(cu), "-o", str(Path(tmp) / "kernel.o")]
        cmd += [f"-I{d}" for d in _include_dirs()]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return "nvcc timed out after 600 s"
    if done.returncode == 0:
        return None
    errors = [ln for ln in done.stderr.splitlines() if "error" in ln] or done.stderr.splitlines() or ["?"]
    return f"nvcc failed: {errors[0][:200]}"


def _first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:200]}"


def _tilelang_alone_fails(func) -> bool:
    """Whether ``tilelang.lower`` alone (TileLang's own layout pass) then nvcc fail on ``func`` too: a
    failure both share is TileLang's (a kernel written for another architecture, a bug of a later
    pass), not the annotations'."""
    import tilelang
    from tilelang import tvm

    try:
        with tvm.target.Target(_tvm_target()):
            source = tilelang.lower(func, target=_tvm_target()).kernel_source
    except Exception:  # noqa: BLE001 - any failure of TileLang's own pipeline answers the question
        return True
    return _nvcc(source) is not None


def _lower_and_compile(func) -> str:
    """``ok`` when TileLang lowers ``func`` with layoutkit as its layout pass (and its ``T.gemm``
    lowering, which must give the CUDA text TileLang's GEMM lowering gives over the same layouts) and
    nvcc compiles the CUDA source; else which step failed and its first line, prefixed
    ``tilelang-fails-too`` where TileLang's own lowering and compile of the kernel fail as well."""
    from layoutkit.errors import LayoutError
    from layoutkit.frontends.tilelang import lower

    if shutil.which("nvcc") is None:
        return "not run: nvcc is not installed"
    try:
        restore = _names(func)
        source = lower(func, _tvm_target(), fallback=False).kernel_source
        restore()
        if source != lower(func, _tvm_target(), fallback=False, lower_gemm=False).kernel_source:
            return "GEMM lowering differs: layoutkit's T.gemm lowering and TileLang's give other CUDA text"
        failure = _nvcc(source)
    except LayoutError as err:
        return f"lowering refused: {_first_line(err)}"
    except Exception as err:  # noqa: BLE001 - TileLang's later passes rejecting the annotations is the finding
        failure = f"lowering failed: {_first_line(err)}"
    if failure is None:
        return "ok"
    return f"tilelang-fails-too: {failure}" if _tilelang_alone_fails(func) else failure


def _gemm_text(func) -> str:
    """Whether layoutkit's ``T.gemm`` lowering and TileLang's give the same CUDA text, both with
    layoutkit as the layout pass, each lowering starting from the same variable names (lowering a GEMM
    renames the kernel's thread variable, which a later lowering of the same objects would see).
    ``varies`` where TileLang's own lowering gives two texts twice (the comparison says nothing there)."""
    from layoutkit.frontends.tilelang import lower

    restore = _names(func)
    try:
        ours = lower(func, _tvm_target(), fallback=False).kernel_source
        theirs = []
        for _ in "ab":
            restore()
            theirs.append(lower(func, _tvm_target(), fallback=False, lower_gemm=False).kernel_source)
    except Exception as err:  # noqa: BLE001 - a lowering failure is reported, as with --compile
        return f"lowering failed: {_first_line(err)}"
    finally:
        restore()
    if theirs[0] != theirs[1]:
        return f"varies (TileLang's own CUDA text differs between two lowerings); {_gemm_statements(func)}"
    if ours != theirs[0]:
        return "differs"
    return "same" if "tl::mma_sync" in ours else "same, no mma.sync"


def _gemm_statements(func) -> str:
    """How many of the kernel's ``mma.sync`` GEMMs layoutkit lowers to TileLang's statement (same TIR
    text), each GEMM lowered both ways from the same node in one lowering."""
    from layoutkit.frontends.tilelang import lower
    from layoutkit.frontends.tilelang_gemm import both_mma_lowerings

    restore = _names(func)
    try:
        with both_mma_lowerings() as seen:
            lower(func, _tvm_target(), fallback=False, lower_gemm=False)
    except Exception as err:  # noqa: BLE001 - reported like the other lowering failures
        return f"GEMM statements: lowering failed: {_first_line(err)}"
    finally:
        restore()
    planned = [(theirs, ours) for theirs, ours in seen if ours is not None]
    same = sum(ours.body.script() == theirs.body.script() for theirs, ours in planned)
    return f"GEMM statements: {same} of {len(planned)} same ({len(seen) - len(planned)} lowered by TileLang)"


def _names(func):
    """A function that gives every variable of ``func`` back the name it has now."""
    from tilelang import tvm
    from tvm.script.ir_builder import IRBuilder

    tirx = tvm.tirx
    seen: list = []
    tirx.stmt_functor.post_order_visit(func.body, seen.append)
    found = [*(n for n in seen if isinstance(n, tirx.Var)), *(n.var for n in seen if isinstance(n, tirx.Bind)),
             *(n.loop_var for n in seen if isinstance(n, tirx.For)), *func.params]
    names = [(v, v.name) for v in {id(v): v for v in found}.values()]

    def restore() -> None:
        for v, name in names:
            if v.name != name:
                IRBuilder.name(name, v)

    return restore


def _capture_and_compare(run, label: str) -> dict:
    """Run ``run()`` with TileLang's lowering hooked; compare the first kernel it builds."""
    lower_mod = sys.modules["tilelang.engine.lower"]
    original = lower_mod.PreLowerSemanticCheck
    seen: list = []

    def capture(mod):
        seen.append(mod)
        raise _Captured

    from tilelang import tvm

    lower_mod.PreLowerSemanticCheck = capture
    _SECONDS.clear()
    t0 = time.perf_counter()
    try:
        with tvm.target.Target(_tvm_target()):
            run()
    except _Captured:
        pass
    except BaseException as err:  # noqa: BLE001 - the example's own failure (no GPU, argparse, ...)
        if not seen:
            traceback.print_exc()  # to the child's stderr: where the example stopped before its kernel
            return {"where": label, "status": "no-kernel", "why": f"{type(err).__name__}: {str(err)[:200]}"}
    finally:
        lower_mod.PreLowerSemanticCheck = original
    if not seen:
        return {"where": label, "status": "no-kernel", "why": "the run built no kernel"}
    funcs = list(seen[0].functions.values())
    _SECONDS["build"] = round(time.perf_counter() - t0, 2)
    result = {"where": label, **_compare(funcs[0]), "seconds": dict(_SECONDS)}
    if ARCH != "sm_80":
        result["arch"] = ARCH
    if COMPILE and result["status"] in ("equal", "differ"):
        result["compiled"] = _lower_and_compile(funcs[0])
    elif GEMM_TEXT and result["status"] in ("equal", "differ"):
        result["gemm_text"] = _gemm_text(funcs[0])
    return result


def child(path: str, max_tests: int, arch: str = "sm_80") -> None:
    """Build and compare the kernels of one file for ``arch``; print one marked JSON line per kernel."""
    import runpy

    global ARCH
    ARCH = arch

    sys.argv = [path]
    sys.path.insert(0, str(Path(path).parent))
    if os.environ.get("LAYOUTKIT_SUITE_SRC"):
        # test files import helpers from the checkout's root (``from examples.gemm_sp.sparse_utils import ...``,
        # as TileLang's pytest rootdir allows); appended, so the installed tilelang still wins
        sys.path.append(os.environ["LAYOUTKIT_SUITE_SRC"])
    _cpu_torch(arch)
    import tilelang.engine.lower  # noqa: F401 - the module the hook patches
    from tilelang.carver.arch.driver import cuda_driver

    # TileLang's own device query (driver.get_num_sms, persistent kernels' grids) goes through
    # torch.device(id), which a CPU-only torch refuses: answer it from the pass's device
    cuda_driver.get_cuda_device_properties = lambda device_id=0: sys.modules["torch"].cuda.get_device_properties()
    # target="auto" outside a target scope (the autotuner compiles its candidates in worker threads,
    # where the scope the capture opens does not reach) detects the pass's GPU
    from tilelang.backend import target as tilelang_target

    tilelang_target.auto_detect_target = _tvm_target

    if Path(path).name.startswith("test_"):
        namespace = {}
        result = _capture_and_compare(lambda: namespace.update(runpy.run_path(path, run_name="suite")), path)
        if result["status"] == "no-kernel" and result["why"] != "the run built no kernel":
            print(MARK, json.dumps(result), flush=True)
            return
        import inspect

        tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)
                 and not inspect.signature(f).parameters]
        for name, fn in tests[:max_tests]:
            print(MARK, json.dumps(_capture_and_compare(fn, f"{path}::{name}")), flush=True)
        return
    print(MARK, json.dumps(_capture_and_compare(lambda: runpy.run_path(path, run_name="__main__"), path)),
          flush=True)


def files(src: Path, only: list[str]) -> list[Path]:
    out = []
    for top in ("examples", "testing/python"):
        for p in sorted((src / top).rglob("*.py")):
            rel = str(p.relative_to(src))
            if p.name in ("conftest.py", "__init__.py") or (only and not any(s in rel for s in only)):
                continue
            if p.name.startswith(("example_", "test_")):
                out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=os.environ.get("TILELANG_SRC"))
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--out")
    parser.add_argument("--markdown", help="also write the list as a Markdown table")
    parser.add_argument("--update", help="a Markdown table written before: replace the rows of the files run now "
                                         "(text above the table is kept) and print the new counts")
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--max-tests", type=int, default=4, help="test functions run per test file")
    parser.add_argument("--compile", action="store_true",
                        help="lower each solved kernel with layoutkit as the layout pass, compile it with nvcc")
    parser.add_argument("--gemm-text", action="store_true",
                        help="check layoutkit's T.gemm lowering gives TileLang's CUDA text (no nvcc)")
    parser.add_argument("--child")
    parser.add_argument("--arch", default="sm_80", choices=sorted(DEVICES), help=argparse.SUPPRESS)
    parser.add_argument("--log", help="keep each child's stderr (tracebacks of files that built no kernel) here")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.max_tests, args.arch)
        return 0
    if not args.src:
        print("no TileLang checkout given (--src or TILELANG_SRC): skipped")
        return 0
    src = Path(args.src)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TILELANG_CACHE_DIR": tempfile.mkdtemp(prefix="layoutkit-suite-"),
           "LAYOUTKIT_SUITE_COMPILE": "1" if args.compile else "0", "LAYOUTKIT_SUITE_SRC": str(src.resolve()),
           "LAYOUTKIT_SUITE_GEMM_TEXT": "1" if args.gemm_text else "0"}
    results = []
    for path in files(src, args.only):
        rel = str(path.relative_to(src))
        t0 = time.perf_counter()
        arch = first_arch(rel)
        found = _run_file(path, src, args, env, arch)
        if arch == "sm_80" and needs_hopper(found):
            found = merge_passes(found, _run_file(path, src, args, env, "sm_90"))
        if arch == "sm_80" and needs_blackwell(found):
            again = {r["where"]: r for r in _run_file(path, src, args, env, "sm_100")}
            found = [again.get(r["where"], r) if needs_blackwell([r]) else r for r in found]
        for r in found:
            results.append(r)
            note = r.get("why") or " ".join(r.get("differ", []) + r.get("missing", []))
            if "compiled" in r:
                note = f"compiled: {r['compiled']} {note}"
            if "gemm_text" in r:
                note = f"gemm text: {r['gemm_text']} {note}"
            print(f"{r['status']:15s} {r['where']}{' @' + r['arch'] if 'arch' in r else ''}  {note[:150]}  "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    summary(results)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(markdown(results)) + "\n")
    if args.update:
        update_markdown(Path(args.update), results)
    return 1 if any(r["status"] == "crash" for r in results) else 0


def _run_file(path: Path, src: Path, args, env: dict, arch: str) -> list[dict]:
    """The rows of one file's child process run for ``arch``."""
    rel = str(path.relative_to(src))
    try:
        done = subprocess.run([sys.executable, __file__, "--child", str(path), "--max-tests", str(args.max_tests),
                               "--arch", arch], capture_output=True, text=True, timeout=args.timeout, env=env,
                              cwd=path.parent)
        if args.log:
            log = Path(args.log) / f"{rel.replace(os.sep, '__')}.{arch}.stderr"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(done.stderr)
        lines = [ln[len(MARK):] for ln in done.stdout.splitlines() if ln.startswith(MARK)]
        found = [json.loads(ln) for ln in lines] or [{"status": "no-kernel",
                                                      "why": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}]
    except subprocess.TimeoutExpired:
        found = [{"status": "no-kernel", "why": f"timed out after {args.timeout:.0f} s"}]
    for r in found:
        r["where"] = str(r.get("where", rel)).replace(str(src) + os.sep, "")
        if arch != "sm_80":
            r["arch"] = arch
    return found


def markdown(results: list[dict]) -> list[str]:
    """One row per kernel: where it was built, its status and the reason or the differing tables."""
    rows = ["| kernel | status | note |", "|---|---|---|"]
    for r in results:
        note = r.get("why") or " ".join(r.get("differ", []) + r.get("missing", []))
        if r["status"] == "equal":
            note = f"{r.get('buffers', 0)} buffers, {r.get('loops', 0)} loops"
        if "compiled" in r:
            note = f"{note}; lowered + nvcc: {r['compiled']}"
        if "arch" in r:
            note = f"{r['arch']}: {note}"
        note = " ".join(str(note).split()).replace("|", "\\|")[:200]
        rows.append(f"| `{r['where']}` | {r['status']} | {note} |")
    return rows


def update_markdown(path: Path, results: list[dict]) -> None:
    """Replace, in the table at ``path``, every row of a file among ``results`` by the new rows (each
    file's rows where its old ones were; a file new to the table at the end), and print the counts of
    the whole table."""
    lines = path.read_text().splitlines()
    start = lines.index(markdown([])[0])
    new = markdown(results)[2:]
    by_file: dict[str, list[str]] = {}
    for r, row in zip(results, new):
        by_file.setdefault(r["where"].split("::")[0], []).append(row)
    table: list[str] = []
    for row in lines[start + 2:]:
        f = row.split("`")[1].split("::")[0] if row.startswith("| `") else None
        if f in by_file:
            table += by_file.pop(f)
        elif f is None or not any(f == r["where"].split("::")[0] for r in results):
            table.append(row)
    table += [row for rows in by_file.values() for row in rows]
    path.write_text("\n".join([*lines[:start + 2], *table]) + "\n")
    counts: dict[str, int] = {}
    for row in table:
        if row.startswith("| `"):
            status = row.split("|")[2].strip()
            counts[status] = counts.get(status, 0) + 1
    print(f"{path}: {sum(counts.values())} rows: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def summary(results: list[dict]) -> None:
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    solved_by_tl = counts.get("equal", 0) + counts.get("differ", 0) + counts.get("refused", 0) + counts.get("solver", 0)
    print("\n" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    compiled = [r["compiled"] for r in results if "compiled" in r]
    if compiled:
        theirs = sum(c.startswith("tilelang-fails-too") for c in compiled)
        print(f"lowered with layoutkit as the pass and compiled with nvcc: {compiled.count('ok')} of "
              f"{len(compiled) - theirs} ({theirs} more that TileLang alone fails to lower or compile too)")
    texts = [r["gemm_text"] for r in results if "gemm_text" in r]
    if texts:
        by_text = {t: texts.count(t) for t in sorted(set(texts))}
        print("layoutkit's T.gemm lowering vs TileLang's, CUDA text: "
              + ", ".join(f"{k} {v}" for k, v in by_text.items()))
    if solved_by_tl:
        print(f"equal on {counts.get('equal', 0)} of {solved_by_tl} kernels that constructed and were not refused by "
              f"TileLang's pass ({counts.get('equal', 0) / solved_by_tl:.0%}; refusals count as not equal)")


if __name__ == "__main__":
    sys.exit(main())
