"""Record what TileLang 0.1.15's Ascend layout constructors do on a grid of inputs, refusals included.

Run with a Python that has ``tilelang`` installed (it is never a dependency of layoutkit)::

    TILELANG_CACHE_DIR=$(mktemp -d) python tests/conformance/tools/record_ascend.py OUT.json

For every ``make_ascend_{nz,compact_nz,major_k,major_mn,l0c,sf}_layout`` and each buffer shape x dtype
(x ``k_align``) of the grid below, the constructor is called on a ``tirx.decl_buffer``.  A call that
raises is an error case ``{"id", "constructor", "args", "error", "message"}``; one that answers is a
``kind == "layout"`` case of ``tests/conformance/data/SCHEMA.md`` (its table is TVM's own
``IndexMap.map_indices`` over the whole domain, so nothing comes from layoutkit).
"""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np
import tilelang  # noqa: F401
import tilelang.layout as tl_layout
import tvm
from tvm import tirx

SHAPES = [(16, 16), (32, 32), (16, 8), (20, 32), (32, 20), (17, 16), (8, 8), (2, 16, 32), (32,), (0, 16),
          (16, 0), (1, 1), (48, 64)]
DTYPES = ["float16", "bfloat16", "float32", "int8", "uint8", "float64", "int4", "int32"]
CONSTRUCTORS = ["make_ascend_nz_layout", "make_ascend_compact_nz_layout", "make_ascend_major_k_layout",
                "make_ascend_major_mn_layout", "make_ascend_l0c_layout", "make_ascend_sf_layout"]
K_ALIGNS = [None, 2, 0, -1]
MAX_POINTS = 4096


def _table(layout, shape) -> tuple[list[int], list[int]]:
    out_shape = [int(x) for x in layout.get_output_shape()]
    grid = np.stack(np.meshgrid(*[np.arange(n) for n in shape], indexing="ij"), -1).reshape(-1, len(shape))
    rows = [[int(v) for v in layout.map_forward_index([tirx.IntImm("int32", int(c)) for c in pt])] for pt in grid]
    flat = np.ravel_multi_index(np.asarray(rows).T, out_shape) if rows else np.zeros(0, np.int64)
    return out_shape, [int(v) for v in flat]


def record(ctor: str, shape: tuple[int, ...], dtype: str, k_align: int | None) -> dict | None:
    args: dict = {"buffer_shape": list(shape), "dtype": dtype}
    if k_align is not None:
        args["k_align"] = k_align
    cid = f"ascend_grid/{ctor}/{dtype}/{'x'.join(map(str, shape))}"
    cid += f"/k_align={k_align}" if k_align is not None else ""
    try:
        buf = tirx.decl_buffer(shape, dtype, scope="shared")
        fn = getattr(tl_layout, ctor)
        layout = fn(buf) if k_align is None else fn(buf, k_align)
        if int(np.prod(shape)) > MAX_POINTS:
            return None
        out_shape, flat = _table(layout, shape)
    except (tvm.error.TVMError, ValueError, AssertionError, TypeError, IndexError) as e:
        return {"id": cid, "constructor": ctor, "args": args, "error": type(e).__name__,
                "message": str(e).strip().splitlines()[-1][:300]}
    return {"id": cid, "kind": "layout", "constructor": ctor, "args": args, "type_key": type(layout).__name__,
            "input_shape": list(shape), "output_shape": out_shape, "forward_linear": flat}


def main(path: str) -> None:
    cases = []
    for ctor, shape, dtype in itertools.product(CONSTRUCTORS, SHAPES, DTYPES):
        aligns = K_ALIGNS if ctor in ("make_ascend_major_k_layout", "make_ascend_major_mn_layout") else [None]
        if ctor == "make_ascend_l0c_layout" and dtype != "float32":
            continue  # the accumulator layout ignores the element type
        for k_align in aligns:
            case = record(ctor, shape, dtype, k_align)
            if case is not None:
                cases.append(case)
    out = {"tilelang_version": tilelang.__version__, "group": "ascend_grid", "cases": cases}
    with open(path, "w") as fh:
        json.dump(out, fh, separators=(",", ":"))
    print(f"{len(cases)} cases, {sum('error' in c for c in cases)} errors -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
