#!/usr/bin/env python
"""Run layoutkit's Gluon front end over Triton's own Gluon kernels: the compile-only cases of a Triton checkout's
``python/test/gluon/test_frontend.py`` and the kernels of its ``python/tutorials/gluon/``, each with every
register layout erased, and compare what ``resolve`` gives with the author's kernel (docs/gluon.md).

Nothing of Triton's is copied here: the kernels are built at run time from the checkout given by
``--triton-src`` (or the ``TRITON_SRC`` environment variable).  The frontend tests run in this process under
pytest with Triton's GLIR builder (``triton._filecheck.run_parser``) wrapped, so every kernel a test builds is
captured with its target; the tests' own inline expectations are not what is measured (an ``expecttest``
stand-in accepts them when the package is absent).  A tutorial's kernels are captured the same way from the
module's ``test_*`` functions where they can run without a GPU; a tutorial that needs torch or a GPU to build its
kernels is recorded as skipped with that reason.

Each captured kernel x target gets one status:

- ``skipped``: not an sm_80 / sm_90 kernel (Blackwell or AMD targets only), nothing to lay out (no register
  layout in its GLIR, or dead ones: no global access survives and Triton alone compiles the erased kernel), or
  the author's kernel itself does not compile to cubin (the reason is recorded);
- ``compiled``: Triton alone refuses the erased kernel (or not: ``triton_alone``), ``resolve`` reads it, the
  resolved kernel compiles to cubin; the row compares it with the author's (convert_layout count, narrowest
  global load / store in bits, SASS instructions, registers, spill bytes);
- ``refused``: ``resolve`` refuses it with a typed error (its message names the op);
- ``no-compile``: resolved, but Triton refuses the resolved kernel (its first error line);
- ``crash``: an untyped exception from ``resolve`` (a bug by definition).

    python tools/gluon_suite.py --triton-src CHECKOUT [--only SUBSTRING ...] [--json out.json]
                                [--markdown tests/data/gluon_suite.md]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling torch_on_cpu

from torch_on_cpu import tensors_on_cpu  # noqa: E402

from layoutkit.errors import LayoutError  # noqa: E402
from layoutkit.frontends.gluon import resolve  # noqa: E402
from layoutkit.frontends.gluon.glir import erase_register_layouts, strip_locations  # noqa: E402
from layoutkit.frontends.gluon.toolchain import compile_glir, kernel_metrics, regressions  # noqa: E402

TARGETS = {("cuda", 80): "sm_80", ("cuda", 90): "sm_90"}
FRONTEND = Path("python") / "test" / "gluon" / "test_frontend.py"
TUTORIALS = Path("python") / "tutorials" / "gluon"


class _Recorder:
    """A pytest plugin: wraps the GLIR builder each test module imported, recording every kernel built."""

    def __init__(self, per_test: int = 0) -> None:
        import triton._filecheck as filecheck

        self.per_test = per_test

        self.real = filecheck.run_parser
        self.stub = filecheck.stub_target
        self.calls: list[dict] = []
        self.test = ""

    def run_parser(self, kernel_fn, *args, **kwargs):
        target = kwargs.get("target", self.stub)
        module = self.real(kernel_fn, *args, **kwargs)
        with contextlib.suppress(Exception):   # a module the printer refuses is not a kernel to measure
            self.calls.append({"test": self.test, "kernel": kernel_fn.fn.__name__,
                               "target": (target.backend, target.arch), "glir": str(module)})
        return module

    def pytest_collection_modifyitems(self, items) -> None:
        """With ``per_test``, only the first that many parametrisations of each test function run (a tutorial's
        other parametrisations build the same kernel with other sizes)."""
        if not self.per_test:
            return
        count: dict[str, int] = {}
        keep = []
        for item in items:
            key = item.nodeid.split("[")[0]
            count[key] = count.get(key, 0) + 1
            if count[key] <= self.per_test:
                keep.append(item)
        items[:] = keep

    def pytest_runtest_setup(self, item) -> None:
        self.test = item.nodeid.split("/")[-1]
        if hasattr(item.module, "run_parser"):
            item.module.run_parser = self.run_parser


def _expecttest_stand_in() -> None:
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stand_in = types.ModuleType("expecttest")
        stand_in.assert_expected_inline = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        sys.modules["expecttest"] = stand_in


DEVICES = {"sm_80": ("NVIDIA A100-SXM4-80GB", 8, 0, 108), "sm_90": ("NVIDIA H100 80GB HBM3", 9, 0, 132)}
"""What the device queries answer while a tutorial builds its kernels for a target: (name, major, minor, SMs)."""

CUDA_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor", "empty_strided",
                  "empty_like", "zeros_like", "ones_like", "rand_like", "randn_like", "full_like", "eye", "linspace")


def _as_device(arch: str, rec: _Recorder) -> None:
    """Tensors asked for on ``cuda`` are made on the CPU, device queries answer as ``arch``'s GPU, and a kernel
    launch builds the kernel's GLIR for ``arch`` (recorded) instead of running it: nothing runs on a GPU."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.runtime.jit import JITFunction

    name, major, minor, sms = DEVICES[arch]
    target = GPUTarget("cuda", major * 10 + minor, 32)

    tensors_on_cpu(torch, CUDA_FACTORIES)
    torch.cuda.is_available = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.get_device_capability = lambda *a, **k: (major, minor)
    torch.cuda.get_device_name = lambda *a, **k: name
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda *a, **k: type(
        "DeviceProperties", (), {"name": name, "major": major, "minor": minor, "multi_processor_count": sms})()

    class Driver:
        def get_current_target(self):
            return target

        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_current_device(self):
            return 0

        def get_device_interface(self):
            return torch.cuda

    triton.runtime.driver.set_active(Driver())
    from triton._C.libtriton import nvidia

    nvidia.cublas.CublasLt = lambda *a, **k: None   # tutorials compare with cuBLAS at import when a GPU answers
    triton.testing.do_bench = lambda *a, **k: 1.0

    def launch(self, *args, grid, warmup, **kwargs):
        rec.run_parser(self, args, kwargs, target=target)

    JITFunction.run = launch


def _capture_child(src: str, files: list[str], arch: str | None, conn) -> None:
    import pytest

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    _expecttest_stand_in()
    rec = _Recorder(per_test=2 if arch is not None else 0)
    if arch is not None:
        try:
            _as_device(arch, rec)
        except ImportError:   # no torch: the tutorials build nothing
            conn.send([])
            return
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--continue-on-collection-errors",
                     "--rootdir", src, *files], plugins=[rec])
    conn.send(rec.calls)


def capture(src: Path, files: list[Path], arch: str | None = None) -> list[dict]:
    """Every kernel the given test files build (pytest in a forked child, output discarded); with ``arch``,
    answering as that GPU and building each launched kernel for it."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    parent, child_end = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_capture_child, args=(str(src), [str(f) for f in files], arch, child_end))
    child.start()
    calls = parent.recv() if parent.poll(1800) else []
    child.join()
    return calls


def cases(src: Path) -> tuple[list[dict], list[dict]]:
    """(kernel x target cases to measure, skipped ones with their reason): per kernel, test function and target
    the first GLIR its test builds (a parametrised test's other builds of the same kernel are not new kernels)."""
    tutorials = sorted((src / TUTORIALS).glob("[0-9]*.py"))
    calls = [{**c, "source": "frontend"} for c in capture(src, [src / FRONTEND])]
    for arch in TARGETS.values():
        calls += [{**c, "source": "tutorial"} for c in capture(src, tutorials, arch)]
    seen: dict[tuple, dict] = {}
    other: dict[str, set] = {}
    for call in calls:
        test = call["test"].split("[")[0]
        if call["target"] not in TARGETS:
            other.setdefault(call["kernel"], set()).add(f"{call['target'][0]} {call['target'][1]}")
            continue
        key = (call["kernel"], test, TARGETS[call["target"]])
        seen.setdefault(key, {"name": f"{call['kernel']} ({test})", "kernel": call["kernel"],
                              "target": TARGETS[call["target"]], "glir": strip_locations(call["glir"])})
    measured = {c["kernel"] for c in seen.values()}
    skipped = [{"name": k, "reason": "Blackwell / AMD targets only: " + ", ".join(sorted(t))}
               for k, t in sorted(other.items()) if k not in measured]
    built = {c["test"].split("::")[0] for c in calls if c["source"] == "tutorial"}
    skipped += [{"name": f.name, "reason": "builds no sm_80 / sm_90 kernel (its tests need Blackwell, or torch "
                 "is absent)"} for f in tutorials if not any(f.name in b for b in built)]
    return sorted(seen.values(), key=lambda c: (c["name"], c["target"])), skipped


def measure(case: dict) -> dict:
    """One case's row, measured in a forked child: Triton's compiler can abort the process (an assertion) on a
    kernel it cannot lower; the row then says at which step."""
    row, exitcode = _in_child(case)
    if row.get("status"):
        return row
    step = row.get("step", "")
    if step == "triton alone":   # Triton alone aborting on the erased kernel is a refusal too
        row, exitcode = _in_child({**case, "triton_alone_aborts": True})
        if row.get("status"):
            return row
    head = {"name": case["name"], "target": case["target"]}
    if step == "author":
        return {**head, "status": "skipped", "reason": "the author's kernel aborts Triton's compiler"}
    return {**head, "status": "crash" if step == "resolve" else "no-compile",
            "reason": f"Triton aborted (exit code {exitcode}) at: {step}"}


def _in_child(case: dict) -> tuple[dict, int | None]:
    """What :func:`_measure_into` recorded for ``case`` in a forked child (all of it, or up to the step at
    which the child died), and the child's exit code."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        progress = manager.dict()
        child = ctx.Process(target=_measure_into, args=(case, progress))
        child.start()
        child.join()
        return dict(progress), child.exitcode


def _measure_into(case: dict, out) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)   # MLIR's diagnostics; the row keeps the first error line
    os.dup2(devnull, 2)
    row = _measure(case, out)
    out.update(row)


def _measure(case: dict, progress) -> dict:
    author, target = case["glir"], case["target"]
    row = {"name": case["name"], "target": target}
    erased = erase_register_layouts(author)
    if erased == author:
        return {**row, "status": "skipped", "reason": "nothing to lay out"}
    progress["step"] = "author"
    try:
        author_kernel = compile_glir(author, target)
    except Exception as err:  # noqa: BLE001  (Triton raises its own errors; any refusal counts)
        return {**row, "status": "skipped", "reason": "the author's kernel does not compile: " + _first_line(err)}
    progress["step"] = "triton alone"
    row["triton_alone"] = False
    if not case.get("triton_alone_aborts"):
        try:
            compile_glir(erased, target)
            row["triton_alone"] = True
        except Exception:  # noqa: BLE001
            pass
    if row["triton_alone"]:
        author_metrics = kernel_metrics(author_kernel)
        if author_metrics["load_bits"] == 0 and author_metrics["store_bits"] == 0:
            return {**row, "status": "skipped", "reason": "nothing to lay out: no global access survives "
                    "compilation and Triton alone compiles the erased kernel"}
    progress["step"] = "resolve"
    try:
        text = resolve(erased, target)
    except LayoutError as err:
        return {**row, "status": "refused", "reason": f"{type(err).__name__}: {_first_line(err)}"}
    except Exception as err:  # noqa: BLE001  (a crash is what this row records)
        return {**row, "status": "crash", "reason": f"{type(err).__name__}: {_first_line(err)}"}
    progress["step"] = "compile resolved"
    try:
        ours = compile_glir(text, target)
    except Exception as err:  # noqa: BLE001
        return {**row, "status": "no-compile", "reason": _first_line(err)}
    row.update(status="compiled", ours=kernel_metrics(ours), author=kernel_metrics(author_kernel))
    row["misses"] = regressions(row["ours"], row["author"])
    return row


def _first_line(err: BaseException) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return (lines[0] if lines else type(err).__name__)[:160]


def summary(rows: list[dict]) -> dict:
    counted = [r for r in rows if r["status"] != "skipped"]
    ok = [r for r in counted if r["status"] == "compiled"]
    ratios = [r["ours"]["sass"] / r["author"]["sass"] for r in ok if r["author"]["sass"] > 0]
    return {
        "cases": len(counted),
        "skipped": len(rows) - len(counted),
        "triton_alone_compiles": sum(bool(r.get("triton_alone")) for r in counted),
        "compile_after_resolve": len(ok),
        "sass_ratio_median": round(statistics.median(ratios), 3) if ratios else None,
        "sass_ratio_max": round(max(ratios), 3) if ratios else None,
        "over_1_05": [r["name"] + " " + r["target"] for r in ok if r["ours"]["sass"] > 1.05 * r["author"]["sass"]],
        **{bar.replace(" ", "_"): [r["name"] + " " + r["target"] for r in ok if bar in r["misses"]]
           for bar in ("more converts", "narrower vectors", "new spills")},
    }


def markdown(rows: list[dict], skipped: list[dict], summ: dict) -> str:
    out = ["# Triton's own Gluon kernels, register layouts erased, resolved by layoutkit",
           "",
           "Written by `tools/gluon_suite.py` (triton 3.9.0, compiled to cubin on the CPU); "
           "`ours / author` per metric.",
           "",
           f"Summary: {summ['compile_after_resolve']} / {summ['cases']} compile after resolve "
           f"(Triton alone: {summ['triton_alone_compiles']}); {summ['skipped']} skipped; "
           f"SASS ratio median {summ['sass_ratio_median']}, max {summ['sass_ratio_max']}; "
           f"more converts {len(summ['more_converts'])}, narrower vectors {len(summ['narrower_vectors'])}, "
           f"new spills {len(summ['new_spills'])}, SASS over 1.05x {len(summ['over_1_05'])}",
           "",
           "| kernel (test) | target | status | converts | ld bits | st bits | SASS | regs | spill | note |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "compiled":
            o, a = r["ours"], r["author"]
            cells = [f"{o[k]} / {a[k]}" for k in ("converts", "load_bits", "store_bits", "sass", "regs", "spill_bytes")]
            note = ", ".join(r["misses"]) + ("" if not r["triton_alone"] else " Triton alone compiles")
        else:
            cells = [""] * 6
            note = r.get("reason", "").replace("|", "/")
        out.append(f"| {r['name']} | {r['target']} | {r['status']} | " + " | ".join(cells) + f" | {note} |")
    out += ["", "Skipped before measuring:", ""]
    out += [f"- {s['name']}: {s['reason']}" for s in skipped]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triton-src", default=os.environ.get("TRITON_SRC"), help="a Triton checkout")
    ap.add_argument("--only", nargs="*", default=[], help="measure only cases whose name contains one of these")
    ap.add_argument("--json", help="write the rows and the summary here")
    ap.add_argument("--markdown", help="write the recorded table here")
    args = ap.parse_args()
    if not args.triton_src:
        ap.error("give --triton-src or set TRITON_SRC")
    os.environ.setdefault("TRITON_ALWAYS_COMPILE", "1")
    found, skipped = cases(Path(args.triton_src))
    rows = []
    for case in found:
        if args.only and not any(s in case["name"] for s in args.only):
            continue
        row = measure(case)
        rows.append(row)
        print(row["name"], row["target"], row["status"], row.get("reason", ""), row.get("misses", ""), flush=True)
    summ = summary(rows)
    print(json.dumps(summ, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summ, "rows": rows, "skipped": skipped}, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, skipped, summ))


if __name__ == "__main__":
    main()
