"""Helpers to replay TileLang 0.1.15 ground-truth records (see data/SCHEMA.md)."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path

import numpy as np

import layoutkit as lk

DATA = Path(__file__).parent / "data"


@cache
def load(group: str) -> dict[str, dict]:
    """The cases of ``data/<group>.json`` (or ``data/<group>.json.gz``) by id."""
    path = DATA / f"{group}.json"
    if path.exists():
        cases = json.loads(path.read_text())["cases"]
    else:
        with gzip.open(DATA / f"{group}.json.gz", "rt") as fh:
            cases = json.load(fh)["cases"]
    return {c["id"]: c for c in cases}


def assert_layout_matches(layout: lk.Layout, record: dict) -> None:
    """Whole-table comparison of a Layout with a ``kind == "layout"`` record."""
    assert list(layout.input_shape) == record["input_shape"], (layout.input_shape, record["input_shape"])
    assert list(layout.output_shape) == record["output_shape"], (layout.output_shape, record["output_shape"])
    ours = layout.linear_table().ravel()
    want = np.asarray(record["forward_linear"])
    bad = np.flatnonzero(ours != want)
    assert bad.size == 0, (
        f"{record['id']}: {bad.size} coordinates differ; first at "
        f"{np.unravel_index(bad[0], layout.input_shape)}: ours {ours[bad[0]]}, TileLang {want[bad[0]]}"
    )
    for k, per_dim in enumerate(record.get("forward", [])):
        assert np.array_equal(layout.table()[..., k].ravel(), np.asarray(per_dim)), (record["id"], k)


# ---- swizzles referenced by name: built by the NV target (docs/reference.md#nvidia-shared-memory-swizzles) ----

_BITS = {"fp16": 16, "bf16": 16, "fp32": 32, "int8": 8, "fp8e4m3": 8, "fp64": 64}
_DTYPE_OF_BITS = {8: "int8", 16: "float16", 32: "float32", 64: "float64"}


def reference_swizzle(kind: str, bits: int, shape: tuple[int, ...]) -> lk.Layout:
    """``nv.make_{kind}_bank_swizzled_layout`` for an element of ``bits`` bits (the map depends on the
    width only)."""
    from layoutkit.targets import nv

    return getattr(nv, f"make_{kind}_bank_swizzled_layout")(shape, _DTYPE_OF_BITS[bits])


def build_named(case_id: str) -> lk.Layout:
    """Layouts referenced by ``of`` that are not in the public files."""
    m = re.fullmatch(r"swizzle/make_(quarter|half|full)_bank_swizzled_layout/(\w+)/([\dx]+)", case_id)
    if m:
        shape = tuple(int(x) for x in m.group(3).split("x"))
        return reference_swizzle(m.group(1), _BITS[m.group(2)], shape)
    if case_id == "layout_ops/linear8x8":
        return lk.Layout([8, 8], lambda i, j: i * 8 + j)
    raise KeyError(case_id)


def assert_fragment_matches(frag: lk.Fragment, record: dict) -> None:
    """Whole-table comparison of a Fragment with a ``kind == "fragment"`` record: every replica's
    thread table and the index table."""
    rid = record["id"]
    assert list(frag.input_shape) == record["input_shape"], rid
    assert list(frag.output_shape) == record["output_shape"], rid
    assert frag.replicate_size == record["replicate"], rid
    assert frag.thread_extent == record["thread_extent"], rid
    want_range = record["thread_range"]
    assert (None if frag.thread_range is None else list(frag.thread_range)) == want_range, rid
    threads = frag.thread_table().reshape(-1)
    want = np.asarray(record["thread"])
    bad = np.flatnonzero(threads != want)
    assert bad.size == 0, f"{rid}: {bad.size} thread entries differ, first at flat {bad[0]}"
    assert not record["index_depends_on_rep"], rid
    assert np.array_equal(frag.index_table().ravel(), np.asarray(record["index_linear"])), rid
