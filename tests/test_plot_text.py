"""ASCII tables and the import contract of layoutkit.plot (no matplotlib needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import layoutkit as lk
from layoutkit.plot import ascii_table, cell_text
from layoutkit.targets import nv


def test_layout_table():
    text = ascii_table(lk.Layout([2, 4], lambda i, j: i * 4 + (j ^ i)))
    assert text.splitlines() == [
        "     0  1  2  3",
        "  0  0  1  2  3",
        "  1  5  4  7  6",
    ]


def test_fragment_table_and_replicas():
    acc = nv.make_mma_store_layout(1, 1, 16, 16)
    lines = ascii_table(acc).splitlines()
    assert len(lines) == 17 and lines[1].split()[:3] == ["0", "T0:L0", "T0:L1"]
    rep = lk.Fragment([2], forward_thread_fn=lambda i, r: i + 2 * r, replicate=2)
    assert cell_text(rep).tolist() == ["T0,2:L0", "T1,3:L0"]


def test_rank3_and_tuple_outputs():
    lines = ascii_table(lk.Layout([2, 2, 2], lambda i, j, k: (k, j, i))).splitlines()
    assert len(lines) == 5 and "(1,0,0)" in lines[1]
    assert ascii_table(lk.Layout([4], lambda i: 3 - i)).splitlines()[1].split() == ["0", "3", "2", "1", "0"]


def test_too_large_and_four_line_view():
    with pytest.raises(lk.ShapeError, match="max_cells"):
        ascii_table(lk.Layout([64, 64], lambda i, j: i * 64 + j))
    assert len(ascii_table(lk.Layout([64, 64], lambda i, j: i * 64 + j), max_cells=4096).splitlines()) == 65
    text = nv.make_mma_store_layout(1, 1, 16, 16).text().splitlines()
    assert [line.split(":")[0] for line in text] == ["Shape", "Thread", "Index", "Replicate"]


def test_import_does_not_load_matplotlib():
    code = "import sys, layoutkit, layoutkit.plot, layoutkit.cli; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_matplotlib_is_a_typed_error(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import layoutkit as lk\n"
        "from layoutkit.plot import plot_layout, PlotDependencyError\n"
        "try:\n"
        "    plot_layout(lk.Layout([2], lambda i: i), sys.argv[1], 'x')\n"
        "except PlotDependencyError as e:\n"
        "    assert isinstance(e, lk.UnsupportedError) and isinstance(e, ImportError)\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert "pip install layoutkit[plot]" in out.stdout
