"""The walkthrough notebooks run top to bottom (executed with a real kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat not installed (pip install layoutkit[test])")
nbclient = pytest.importorskip("nbclient", reason="nbclient not installed (pip install layoutkit[test])")
pytest.importorskip("ipykernel", reason="ipykernel not installed (pip install layoutkit[test])")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# A line each notebook must print, so a notebook whose cells silently stop doing work fails.
EXPECTED = {
    "01_algebra_and_proofs.ipynb": "proved by isl",
    "02_gemm_inference.ipynb": "figure: ['C_local.svg']",
    "03_ascend_tiles.ipynb": "((_16,2),(_16,3))",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert EXPECTED[path.name] in text
