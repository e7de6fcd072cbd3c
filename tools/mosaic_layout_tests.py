"""Run Mosaic GPU's deviceless layout-inference tests with layoutkit's pass swapped in, and say per case
whether it passed, whether it called ``infer_layout``, and why it failed (``docs/mosaic_gpu.md#tests``).

The test file is not in the jax wheel: pass a JAX checkout at the tag of the installed jax
(``--jax-src`` or ``MOSAIC_TESTS``); its ``tests/mosaic/gpu_layout_inference_test.py`` and
``jax/experimental/mosaic/gpu/test_util.py`` are read from there, nothing is copied.

    python tools/mosaic_layout_tests.py --jax-src ~/src/jax [--pass mosaic] [--json out.json] [-k EXPR]

``--pass mosaic`` runs Mosaic's own pass (the baseline).  The summary counts the cases that call
``infer_layout`` and the ones of those that pass; ``--json`` writes one record per case.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

TEST_FILE = Path("tests/mosaic/gpu_layout_inference_test.py")
TEST_UTIL = Path("jax/experimental/mosaic/gpu/test_util.py")


class Recorder:
    """A pytest plugin: swaps the pass in, notes the cases that call it, and records outcomes."""

    def __init__(self, jax_src: Path, which: str):
        self.jax_src, self.which = jax_src, which
        self.results: dict[str, dict[str, Any]] = {}
        self.current: str | None = None
        self.calls: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.hooks = ExitStack()

    def pytest_configure(self, config: Any) -> None:
        import jax.experimental.mosaic.gpu as mgpu
        from jax.experimental.mosaic.gpu import layout_inference

        from layoutkit.frontends.interpose import Interposer, attribute_patch
        from layoutkit.frontends.mosaic_gpu_swap import override_pass

        spec = importlib.util.spec_from_file_location("jax.experimental.mosaic.gpu.test_util",
                                                      self.jax_src / TEST_UTIL)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        mgpu.test_util = module
        if self.which == "layoutkit":
            from layoutkit.frontends.mosaic_gpu import infer_layout as chosen
        else:
            chosen = layout_inference.infer_layout

        inside = [False]

        def counted(_original: Any, *args: Any, **kwargs: Any) -> Any:
            if self.current is not None:
                self.calls[self.current] = self.calls.get(self.current, 0) + 1
            start = time.perf_counter()
            inside[0] = True
            try:
                return chosen(*args, **kwargs)
            finally:
                inside[0] = False
                if self.current is not None:
                    self.seconds[self.current] = self.seconds.get(self.current, 0.0) + time.perf_counter() - start

        def guarded(name: str) -> Any:
            def call(solver: Any, *args: Any, **kwargs: Any) -> Any:
                if inside[0] and self.which == "layoutkit":
                    raise AssertionError(f"layoutkit's pass called Mosaic's {name}")
                return solver(*args, **kwargs)
            return call

        # the tests run in this thread: the blocks opened here hold for all of them
        self.hooks.enter_context(override_pass(counted))
        # layoutkit's pass must never reach Mosaic's solver: inside it, the solver raises
        for name in ("find_assignments_for", "conjure_assignment"):
            hook: Interposer[Any] = Interposer(f"layout_inference.{name}", attribute_patch(layout_inference, name))
            self.hooks.enter_context(hook.override(guarded(name)))

    def pytest_unconfigure(self, config: Any) -> None:
        self.hooks.close()

    def pytest_runtest_setup(self, item: Any) -> None:
        self.current = item.nodeid.split("::", 1)[-1]

    def pytest_runtest_logreport(self, report: Any) -> None:
        name = report.nodeid.split("::", 1)[-1]
        entry = self.results.setdefault(name, {"outcome": "passed", "calls": 0, "why": ""})
        if report.failed:
            entry["outcome"] = "failed"
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["why"] = crash.message.splitlines()[0][:400] if crash is not None else str(report.longrepr)[-400:]
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
        entry["calls"] = self.calls.get(name, 0)
        entry["seconds"] = round(self.seconds.get(name, 0.0), 6)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jax-src", default=os.environ.get("MOSAIC_TESTS"), help="a JAX checkout (MOSAIC_TESTS)")
    parser.add_argument("--pass", dest="which", choices=("layoutkit", "mosaic"), default="layoutkit")
    parser.add_argument("--json", help="write one record per case here")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    args = parser.parse_args(argv)
    if not args.jax_src:
        parser.error("needs --jax-src or MOSAIC_TESTS: a JAX checkout at the tag of the installed jax")
    jax_src = Path(args.jax_src).expanduser()
    if not (jax_src / TEST_FILE).is_file():
        parser.error(f"{jax_src} has no {TEST_FILE}")
    import pytest

    recorder = Recorder(jax_src, args.which)
    pytest_args = [str(jax_src / TEST_FILE), "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=",
                   "--rootdir", str(jax_src / TEST_FILE.parent), "-p", "no:randomly"]
    if args.keyword:
        pytest_args += ["-k", args.keyword]
    pytest.main(pytest_args, plugins=[recorder])
    results = recorder.results
    calling = {n: r for n, r in results.items() if r["calls"]}
    passed = [n for n, r in calling.items() if r["outcome"] == "passed"]
    total_passed = sum(r["outcome"] == "passed" for r in results.values())
    print(f"{args.which}: {len(results)} cases, {total_passed} passed; {len(calling)} call infer_layout, "
          f"{len(passed)} of them pass")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
