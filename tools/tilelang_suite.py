#!/usr/bin/env python
"""Run layoutkit's TileLang adapter over the kernels of a TileLang checkout (its ``examples/`` and
``testing/python/``) and compare each with TileLang 0.1.15's own LayoutInference, table for table.

Nothing of TileLang's is copied here: the kernels are constructed at test time from the checkout
given by ``--src`` (or the ``TILELANG_SRC`` environment variable).  Each file runs in its own
process: an example's ``__main__`` block, or each ``test_*`` function of a test file that takes no
arguments.  TileLang's lowering entry (``tilelang.engine.lower``'s semantic check, which
``tilelang.lower``, ``tilelang.compile`` and ``@tilelang.jit`` all pass) is hooked to capture the
first kernel a run builds and stop it there, so no GPU is needed; torch tensors asked for on
``cuda`` are made on the CPU.  Each captured kernel gets one status:

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
source compiled with nvcc for sm_80: the row gets ``compiled`` (``ok`` or the first error line;
``tilelang-fails-too`` where ``tilelang.lower`` alone and nvcc fail on the kernel as well).

    python tools/tilelang_suite.py --src CHECKOUT [--only SUBSTRING ...] [--compile] [--out results.json]
                                   [--markdown list.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "SUITE-RESULT:"
CUDA_FACTORIES = ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor", "randn_like",
                  "zeros_like", "ones_like", "empty_like", "rand_like", "full_like", "eye", "linspace")


COMPILE = os.environ.get("LAYOUTKIT_SUITE_COMPILE") == "1"
"""Set in each child by ``--compile``: lower and nvcc-compile every kernel both solve."""


class _Captured(Exception):
    """Raised inside TileLang's lowering once the kernel is captured."""


def _cpu_torch() -> None:
    """Tensors requested on ``cuda`` are made on the CPU (kernels are only built, never run)."""
    try:
        import torch
    except ImportError:
        return

    def wrap(fn):
        def call(*args, **kwargs):
            if "device" in kwargs and "cuda" in str(kwargs["device"]):
                kwargs["device"] = "cpu"
            return fn(*args, **kwargs)
        return call

    for name in CUDA_FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, wrap(getattr(torch, name)))
    torch.Tensor.cuda = lambda self, *a, **k: self
    original_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple("cpu" if "cuda" in str(a) and not isinstance(a, torch.dtype) else a for a in args)
        if "cuda" in str(kwargs.get("device", "")):
            kwargs["device"] = "cpu"
        return original_to(self, *args, **kwargs)

    torch.Tensor.to = to
    torch.cuda.is_available = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
    # what an A100 answers: examples pick their configuration from these before building a kernel
    torch.cuda.get_device_capability = lambda *a, **k: (8, 0)
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_name = lambda *a, **k: "NVIDIA A100-SXM4-80GB"


def _compare(func) -> dict:
    """The status of one captured kernel (see the module docstring)."""
    from layoutkit.errors import LayoutError
    from layoutkit.frontends.tilelang import check_selections, tilelang_inference
    from layoutkit.infer import infer_layouts
    from layoutkit.testing.assertions import same_tables

    try:
        run = tilelang_inference(func, "sm_80")
    except LayoutError as err:  # any typed refusal of the adapter (an unsupported construct, dtype, shape)
        if str(err).startswith("TileLang's lowering"):  # TileLang's own passes before LayoutInference fail
            return {"status": "tilelang-fails", "why": str(err)[:400]}
        return {"status": "refused", "why": f"{type(err).__name__}: {str(err)[:400]}"}
    except Exception as err:  # noqa: BLE001 - an untyped exception is the finding
        return {"status": "crash", "why": f"{type(err).__name__}: {str(err)[:400]}"}
    try:
        ours = infer_layouts(run.program)
        check_selections(run.selections, ours.layout_map)
    except LayoutError as err:
        return {"status": "both-fail" if run.failed else "solver", "why": f"{type(err).__name__}: {str(err)[:300]}"}
    except Exception as err:  # noqa: BLE001
        return {"status": "crash", "why": f"{type(err).__name__}: {str(err)[:400]}"}
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


SM80 = {"kind": "cuda", "arch": "sm_80"}


def _nvcc(source: str) -> str | None:
    """None when nvcc compiles the CUDA ``source`` for sm_80; else its first error line."""
    with tempfile.TemporaryDirectory(prefix="layoutkit-suite-nvcc-") as tmp:
        cu = Path(tmp) / "kernel.cu"
        cu.write_text(source)
        cmd = ["nvcc", "-arch=sm_80", "-std=c++17", "-w", "-c", str(cu), "-o", str(Path(tmp) / "kernel.o")]
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
        with tvm.target.Target(SM80):
            source = tilelang.lower(func, target=SM80).kernel_source
    except Exception:  # noqa: BLE001 - any failure of TileLang's own pipeline answers the question
        return True
    return _nvcc(source) is not None


def _lower_and_compile(func) -> str:
    """``ok`` when TileLang lowers ``func`` with layoutkit as its layout pass and nvcc compiles the CUDA
    source; else which step failed and its first line, prefixed ``tilelang-fails-too`` where TileLang's
    own lowering and compile of the kernel fail as well."""
    from layoutkit.errors import LayoutError
    from layoutkit.frontends.tilelang_pass import lower

    if shutil.which("nvcc") is None:
        return "not run: nvcc is not installed"
    try:
        failure = _nvcc(lower(func, SM80, fallback=False).kernel_source)
    except LayoutError as err:
        return f"lowering refused: {_first_line(err)}"
    except Exception as err:  # noqa: BLE001 - TileLang's later passes rejecting the annotations is the finding
        failure = f"lowering failed: {_first_line(err)}"
    if failure is None:
        return "ok"
    return f"tilelang-fails-too: {failure}" if _tilelang_alone_fails(func) else failure


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
    try:
        with tvm.target.Target({"kind": "cuda", "arch": "sm_80"}):  # what target="auto" finds on an A100
            run()
    except _Captured:
        pass
    except BaseException as err:  # noqa: BLE001 - the example's own failure (no GPU, argparse, ...)
        if not seen:
            return {"where": label, "status": "no-kernel", "why": f"{type(err).__name__}: {str(err)[:200]}"}
    finally:
        lower_mod.PreLowerSemanticCheck = original
    if not seen:
        return {"where": label, "status": "no-kernel", "why": "the run built no kernel"}
    funcs = list(seen[0].functions.values())
    result = {"where": label, **_compare(funcs[0])}
    if COMPILE and result["status"] in ("equal", "differ"):
        result["compiled"] = _lower_and_compile(funcs[0])
    return result


def child(path: str, max_tests: int) -> None:
    """Build and compare the kernels of one file; print one marked JSON line per kernel."""
    import runpy

    sys.argv = [path]
    sys.path.insert(0, str(Path(path).parent))
    _cpu_torch()
    import tilelang.engine.lower  # noqa: F401 - the module the hook patches

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
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--max-tests", type=int, default=4, help="test functions run per test file")
    parser.add_argument("--compile", action="store_true",
                        help="lower each solved kernel with layoutkit as the layout pass, compile it with nvcc")
    parser.add_argument("--child")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.max_tests)
        return 0
    if not args.src:
        print("no TileLang checkout given (--src or TILELANG_SRC): skipped")
        return 0
    src = Path(args.src)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TILELANG_CACHE_DIR": tempfile.mkdtemp(prefix="layoutkit-suite-"),
           "LAYOUTKIT_SUITE_COMPILE": "1" if args.compile else "0"}
    results = []
    for path in files(src, args.only):
        rel = str(path.relative_to(src))
        t0 = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, __file__, "--child", str(path), "--max-tests", str(args.max_tests)],
                                  capture_output=True, text=True, timeout=args.timeout, env=env, cwd=path.parent)
            lines = [ln[len(MARK):] for ln in done.stdout.splitlines() if ln.startswith(MARK)]
            found = [json.loads(ln) for ln in lines] or [{"status": "no-kernel",
                                                          "why": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}]
        except subprocess.TimeoutExpired:
            found = [{"status": "no-kernel", "why": f"timed out after {args.timeout:.0f} s"}]
        for r in found:
            r["where"] = str(r.get("where", rel)).replace(str(src) + os.sep, "")
            results.append(r)
            note = r.get("why") or " ".join(r.get("differ", []) + r.get("missing", []))
            if "compiled" in r:
                note = f"compiled: {r['compiled']} {note}"
            print(f"{r['status']:15s} {r['where']}  {note[:150]}  ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    summary(results)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(markdown(results)) + "\n")
    return 1 if any(r["status"] == "crash" for r in results) else 0


def markdown(results: list[dict]) -> list[str]:
    """One row per kernel: where it was built, its status and the reason or the differing tables."""
    rows = ["| kernel | status | note |", "|---|---|---|"]
    for r in results:
        note = r.get("why") or " ".join(r.get("differ", []) + r.get("missing", []))
        if r["status"] == "equal":
            note = f"{r.get('buffers', 0)} buffers, {r.get('loops', 0)} loops"
        if "compiled" in r:
            note = f"{note}; lowered + nvcc: {r['compiled']}"
        note = " ".join(str(note).split()).replace("|", "\\|")[:200]
        rows.append(f"| `{r['where']}` | {r['status']} | {note} |")
    return rows


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
    if solved_by_tl:
        print(f"equal on {counts.get('equal', 0)} of {solved_by_tl} kernels that constructed and were not refused by "
              f"TileLang's pass ({counts.get('equal', 0) / solved_by_tl:.0%}; refusals count as not equal)")


if __name__ == "__main__":
    sys.exit(main())
