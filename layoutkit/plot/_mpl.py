"""Lazy matplotlib access, figure saving and colour palettes shared by the plot functions.

matplotlib is imported only when a figure is drawn, with the Agg backend, no TeX and SVG text kept
as ``<text>`` elements (``svg.fonttype = "none"``), so tests and tools can read the labels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..errors import OptionalDependencyError, ShapeError

FORMATS = ("png", "svg", "pdf")
SAVE_DPI = 100
"""Pixels per inch of every figure, drawn and saved (the figures are laid out in inches at this dpi)."""
RC = {"svg.fonttype": "none", "text.usetex": False, "svg.hashsalt": "layoutkit", "path.simplify": False}


class PlotDependencyError(OptionalDependencyError):
    """matplotlib is not installed: ``pip install layoutkit[plot]``."""


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or :class:`PlotDependencyError`."""
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the environment
        raise PlotDependencyError(
            "plotting needs matplotlib, which is not installed; run: pip install layoutkit[plot]", extra="plot"
        ) from None
    if matplotlib.get_backend().lower() != "agg":
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """Normalise ``"png" | "svg" | "pdf" | "all"``, a comma-separated string of them (as TileLang
    accepts) or a list.

    >>> check_formats("all")
    ('png', 'svg', 'pdf')
    >>> check_formats("svg, png")
    ('svg', 'png')
    >>> check_formats(["svg", "png"])
    ('svg', 'png')
    """
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out: list[str] = []
    for f in items:
        f = str(f).strip().lower().lstrip(".")
        if f == "all":
            out.extend(x for x in FORMATS if x not in out)
        elif f in FORMATS:
            if f not in out:
                out.append(f)
        else:
            raise ShapeError(f"unknown figure format {f!r}; expected 'png', 'svg', 'pdf' or 'all'")
    if not out:
        raise ShapeError("expected at least one figure format; found none")
    return tuple(out)


def check_name(name: str) -> str:
    """A file stem without directory parts."""
    text = str(name)
    if not text or os.sep in text or (os.altsep and os.altsep in text) or text in (".", ".."):
        raise ShapeError(f"figure name must be a plain file stem such as 'layout'; found {name!r}")
    return text


def save(fig: Any, save_directory: str | os.PathLike, name: str, formats: str | Sequence[str]) -> list[str]:
    """Write ``fig`` as ``save_directory/name.<fmt>`` for each format, close it, return the paths."""
    plt = pyplot()
    fmts = check_formats(formats)
    stem = check_name(name)
    os.makedirs(save_directory, exist_ok=True)
    paths = []
    try:
        with plt.rc_context(RC):
            for f in fmts:
                path = os.path.join(os.fspath(save_directory), f"{stem}.{f}")
                fig.savefig(path, format=f, dpi=SAVE_DPI, metadata=_metadata(f))
                paths.append(path)
    finally:
        plt.close(fig)
    return paths


def _metadata(fmt: str) -> dict | None:
    if fmt == "svg":
        return {"Date": None}
    if fmt == "pdf":
        return {"CreationDate": None}
    return None


def palette(n: int, colormap: str | None = None) -> list[tuple[float, float, float, float]]:
    """``n`` distinct RGBA colours: tab20/tab20b/tab20c for up to 60 (qualitative, one per
    thread), else ``n`` samples of ``colormap`` (default ``turbo``)."""
    plt = pyplot()
    if colormap is None and n <= 60:
        base = [c for m in ("tab20", "tab20b", "tab20c") for c in plt.get_cmap(m).colors]  # type: ignore[attr-defined]
        return [tuple(base[k]) + (1.0,) for k in range(n)]  # type: ignore[misc]
    cmap = plt.get_cmap(colormap or "turbo")
    if n == 1:
        return [cmap(0.5)]
    return [cmap(k / (n - 1)) for k in range(n)]
