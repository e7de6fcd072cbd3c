"""plot_layout / plot_diff / plot_banks, checked by the structure of the SVG they write."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.targets import nv

pytest.importorskip("matplotlib")

from layoutkit.plot import bank_hits, difference_mask, plot_banks, plot_diff, plot_layout  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def _svg(path: str) -> ET.Element:
    return ET.parse(path).getroot()


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def _group(root: ET.Element, gid: str) -> ET.Element:
    """The element with ``id=gid``: a ``<g>`` of cell paths, or an ``<image>`` for large grids."""
    for g in root.iter():
        if g.get("id") == gid:
            return g
    raise AssertionError(f"no element with id={gid!r} in the SVG")


def _fills(group: ET.Element) -> list[str]:
    out = []
    for p in group.iter(f"{SVG}path"):
        m = re.search(r"fill:\s*(#[0-9a-fA-F]{6})", p.get("style", ""))
        if m:
            out.append(m.group(1).lower())
    return out


def _svg_of(paths: list[str]) -> str:
    (svg,) = [p for p in paths if p.endswith(".svg")]
    return svg


def test_fragment_cells_coloured_by_thread_and_labelled(tmp_path):
    frag = lk.Fragment([4, 8], forward_thread_fn=lambda i, j: i * 2 + j // 4)  # 8 threads, 4 regs each
    paths = plot_layout(frag, tmp_path, "frag", formats="svg")
    assert paths == [os.path.join(str(tmp_path), "frag.svg")]
    root = _svg(paths[0])
    texts = _texts(root)
    assert "T0 L0" in texts and "T7 L3" in texts
    fills = _fills(_group(root, "cells"))
    assert len(fills) == frag.size
    assert len(set(fills)) == frag.thread_extent == 8
    # cells of one thread share a colour; the colour order follows the row-major cells
    threads = np.asarray(frag.thread_table()[0]).ravel()
    by_thread = {}
    for t, f in zip(threads, fills):
        assert by_thread.setdefault(int(t), f) == f


def test_mma_accumulator_fragment_has_32_thread_colours(tmp_path):
    acc = nv.make_mma_store_layout(1, 1, 16, 16)
    root = _svg(plot_layout(acc, tmp_path, "acc", formats="svg")[0])
    assert len(set(_fills(_group(root, "cells")))) == 32
    assert sum(1 for t in _texts(root) if re.fullmatch(r"T\d+ L\d+", t)) == 256


def test_replicas_get_one_panel_each(tmp_path):
    frag = lk.Fragment([4, 4], forward_thread_fn=lambda i, j, rep: i + 4 * rep, replicate=2)
    root = _svg(plot_layout(frag, tmp_path, "rep", formats="svg")[0])
    texts = _texts(root)
    assert "T0 L0" in texts and "T4 L0" in texts
    assert len(_fills(_group(root, "cells"))) == len(_fills(_group(root, "cells1"))) == 16
    assert any("replica 1" in t for t in texts)


def test_layout_input_and_output_views(tmp_path):
    layout = lk.Layout([4, 4], lambda i, j: (j, i))
    inp = _svg(plot_layout(layout, tmp_path, "in", formats="svg", colormap="magma")[0])
    out = _svg(plot_layout(layout, tmp_path, "out", formats="svg", view="output")[0])
    assert "(2,1)" in _texts(inp) and "(1,2)" in _texts(out)
    assert len(_fills(_group(inp, "cells"))) == 16


def test_output_view_of_padded_layout_leaves_holes(tmp_path):
    padded = lk.Layout([2, 4], lambda i, j: i * 6 + j)
    root = _svg(plot_layout(padded, tmp_path, "pad", formats="svg", view="output", grid_shape=(2, 6))[0])
    fills = _fills(_group(root, "cells"))
    assert len(fills) == 12
    assert fills.count("#ebebeb") == 4  # 4 unused positions drawn light grey
    assert "(1,3)" in _texts(root)


def test_tla_layout_and_swizzle(tmp_path):
    a = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
    root = _svg(plot_layout(a, tmp_path, "tla", formats="svg")[0])
    assert "37" in _texts(root)  # a(1, 5) == 37
    swz = nv.make_full_bank_swizzled_layout([8, 64], "float16")
    paths = plot_layout(swz, tmp_path, "swz", formats="all")
    assert sorted(os.path.basename(p) for p in paths) == ["swz.pdf", "swz.png", "swz.svg"]
    assert all(os.path.getsize(p) > 0 for p in paths)
    assert open(paths[0], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_large_layout_is_one_image_without_cell_labels(tmp_path):
    big = nv.make_full_bank_swizzled_layout([128, 128], "float16")
    root = _svg(plot_layout(big, tmp_path, "big", formats="svg")[0])
    assert _group(root, "cells").tag == f"{SVG}image"
    assert len(_texts(root)) < 100


def test_plot_diff_marks_differing_cells(tmp_path):
    a = lk.Layout([4, 4], lambda i, j: i * 4 + j)
    b = lk.Layout([4, 4], lambda i, j: i * 4 + (j ^ (i // 2)))
    mask = difference_mask(a, b)
    assert int(mask.sum()) == 8
    root = _svg(_svg_of(plot_diff(a, b, tmp_path, "d", formats="svg")))
    fills = _fills(_group(root, "diff-cells"))
    assert fills.count("#d62728") == 8 and len(fills) == 16
    assert "9 / 8" in _texts(root)
    assert any("8 of 16 cells differ" in t for t in _texts(root))


def test_plot_diff_of_fragments_and_bad_shapes(tmp_path):
    f = lk.Fragment([2, 4], forward_thread_fn=lambda i, j: j)
    g = lk.Fragment([2, 4], forward_thread_fn=lambda i, j: 3 - j)
    assert difference_mask(f, f).sum() == 0
    root = _svg(plot_diff(f, g, tmp_path, "fd", formats="svg")[0])
    assert _fills(_group(root, "diff-cells")).count("#d62728") == 8
    with pytest.raises(lk.ShapeError):
        plot_diff(f, lk.Layout([4, 2], lambda i, j: i * 2 + j), tmp_path, "bad")


def test_plot_banks_heat_map_matches_report(tmp_path):
    acc = nv.make_mma_store_layout(1, 1, 16, 16).repeat([1, 4], repeat_on_thread=False)
    plain = nv.make_linear_layout((16, 64), "float16")
    hits, names, report = bank_hits(plain, acc, "float16", "st.shared.b32")
    assert hits.shape == (16, 32) and int(hits.max(axis=1).sum()) == report.wavefronts
    assert report.ways == 8 == int(hits.max())
    root = _svg(plot_banks(plain, acc, "float16", tmp_path, "banks", instruction="st.shared.b32",
                           formats="svg")[0])
    fills = _fills(_group(root, "bank-hits"))
    assert len(fills) == hits.size
    assert len(set(fills)) == len(np.unique(hits))  # one colour per hit count
    texts = _texts(root)
    assert "bank" in texts and "w0 i0 p0" in texts
    assert any("128 wavefronts" in t and "8-way" in t for t in texts)
    swz = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    hits_swz, _, rep_swz = bank_hits(swz, acc, "float16", "st.shared.b32")
    assert rep_swz.ways == 1 and int(hits_swz.max()) == 1


def test_plot_banks_ldmatrix_phases():
    reads = nv.transpose_read_access(16, 32)
    hits, names, report = bank_hits(lk.Layout([16, 32], lambda i, j: i * 32 + (j ^ i)), reads, "float32")
    assert int(hits.max(axis=1).sum()) == report.wavefronts == 32


def test_bad_arguments(tmp_path):
    layout = lk.Layout([2, 2], lambda i, j: i * 2 + j)
    with pytest.raises(lk.ShapeError, match="format"):
        plot_layout(layout, tmp_path, "x", formats="jpg")
    with pytest.raises(lk.ShapeError, match="view"):
        plot_layout(layout, tmp_path, "x", view="sideways")
    with pytest.raises(lk.ShapeError, match="grid_shape"):
        plot_layout(layout, tmp_path, "x", grid_shape=(3, 3))
    with pytest.raises(lk.ShapeError, match="file stem"):
        plot_layout(layout, tmp_path, "a/b")
    with pytest.raises(lk.LayoutError, match="expected an lk.Layout"):
        plot_layout("lambda i: i", tmp_path, "x")
    assert not list(tmp_path.iterdir())


def test_grid_shape_folds_cells(tmp_path):
    layout = lk.Layout([16], lambda i: 15 - i)
    root = _svg(plot_layout(layout, tmp_path, "fold", formats="svg", grid_shape=(4, 4))[0])
    assert len(_fills(_group(root, "cells"))) == 16 and "15" in _texts(root)


def test_fragment_output_view_is_thread_by_register(tmp_path):
    frag = lk.Fragment([2, 4], forward_thread_fn=lambda i, j, rep: j // 2 + 2 * rep, replicate=2)  # 4 threads
    root = _svg(plot_layout(frag, tmp_path, "regs", formats="svg", view="output")[0])
    texts = _texts(root)
    assert "thread" in texts and "register" in texts
    fills = _fills(_group(root, "cells"))
    assert len(fills) == frag.thread_extent * frag.local_size == 16
    assert "#ebebeb" not in fills  # every (thread, register) slot holds one element
    # replica 1 of element (1, 3) sits in thread 3, register 3
    assert texts.count("(1,3)") == 2


def test_output_view_marks_collisions_and_folds_wide_outputs(tmp_path):
    fold = lk.Layout([2, 2], lambda i, j: i + j)  # (0,1) and (1,0) share offset 1
    root = _svg(plot_layout(fold, tmp_path, "fold", formats="svg", view="output")[0])
    assert "(0,1)+" in _texts(root)
    swz = nv.make_full_bank_swizzled_layout([8, 64], "float16")  # outputs (1, 1, 512): 8 rows of 64
    root = _svg(plot_layout(swz, tmp_path, "swz", formats="svg", view="output")[0])
    assert len(_fills(_group(root, "cells"))) == 512


def test_many_replicas_show_a_bounded_number_of_panels(tmp_path):
    full = lk.make_fully_replicated_fragment([2, 2], 32)
    root = _svg(plot_layout(full, tmp_path, "full", formats="svg")[0])
    assert "showing 4 of 32" in " ".join(_texts(root))  # the panel title, wrapped to the panel's width
    ids = {e.get("id") for e in root.iter() if (e.get("id") or "").startswith("cells")}
    assert ids == {"cells"} | {f"cells{k}" for k in range(1, 4)}


def test_plot_banks_all_formats(tmp_path):
    reads = nv.transpose_read_access(16, 32)
    paths = plot_banks(lk.Layout([16, 32], lambda i, j: i * 32 + j), reads, "float32", tmp_path, "t", formats="all")
    assert [os.path.splitext(p)[1] for p in paths] == [".png", ".svg", ".pdf"]
    with pytest.raises(lk.LayoutError, match="shared-memory"):
        plot_banks(tla.make_layout((4, 4)), reads, "float32", tmp_path, "t")
