"""The walkthrough notebooks: stored with their outputs (text and at least one figure), and re-executed
here with a real kernel from a folder that is not notebooks/, giving the same printed text as stored
(nothing volatile is printed: no paths, timings or addresses; figures are not compared byte for byte)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat not installed (pip install layoutkit[test])")
nbclient = pytest.importorskip("nbclient", reason="nbclient not installed (pip install layoutkit[test])")
pytest.importorskip("ipykernel", reason="ipykernel not installed (pip install layoutkit[test])")
pytest.importorskip("matplotlib", reason="the notebooks draw figures")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# A line each notebook must print, so a notebook whose cells silently stop doing work fails.
EXPECTED = {
    "01_algebra_and_proofs.ipynb": "proved by isl",
    "02_gemm_inference.ipynb": "figure: ['C_local.svg']",
    "03_ascend_tiles.ipynb": "((_16,2),(_16,3))",
}


def _streams(nb) -> list[str]:
    return [o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
            if o.get("output_type") == "stream"]


def _images(nb) -> int:
    return sum("image/png" in o.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               for o in cell.get("outputs", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_with_outputs_and_a_figure(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code), "every code cell keeps its output"
    assert all(c.get("execution_count") == k for k, c in enumerate(code, 1)), "executed top to bottom"
    assert _images(nb) >= 1
    assert EXPECTED[path.name] in "".join(_streams(nb))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_from_any_folder_and_prints_what_is_stored(path, tmp_path):
    stored = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(stored)
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})  # not notebooks/
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert EXPECTED[path.name] in "".join(_streams(nb))
    assert _streams(nb) == _streams(stored)
    assert _images(nb) == _images(stored)
