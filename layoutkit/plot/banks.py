"""``plot_banks``: a heat map of shared-memory bank hits (phases x 32 banks) from the NV bank model.

Cell ``(phase, bank)`` counts the distinct 4-byte words a phase touches in that bank; a phase costs
the maximum of its row in wavefronts, so the rows' maxima add up to the
:class:`~layoutkit.targets.nv.BankReport`'s ``wavefronts``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..algebra.layout import Layout
from ..errors import LayoutError
from ..targets.nv import banks as nvb
from ._mpl import RC, pyplot, save
from .draw import LABEL_CELLS, colorbar_for_values, draw_cells, figure, rgba_grid, tick_step
from .grids import Panel


def bank_hits(smem_layout: Layout, access, dtype: object, instruction: str = "ld.shared.b32"):
    """``(hits, phase_names, report)``: ``hits[p, b]`` distinct words of phase ``p`` in bank ``b``
    (phases in warp, instruction, phase order), and the :func:`~layoutkit.targets.nv.bank_conflicts`
    report of the same access.

    >>> import layoutkit as lk
    >>> from layoutkit.targets import nv
    >>> reads = nv.transpose_read_access(16, 32)
    >>> hits, names, report = bank_hits(lk.Layout([16, 32], lambda i, j: i * 32 + j), reads, "float32")
    >>> hits.shape, names[0], int(hits.max(axis=1).sum()) == report.wavefronts == 256
    ((16, 32), 'w0 i0 p0', True)
    """
    report = nvb.bank_conflicts(smem_layout, access, dtype, instruction, method="exact")
    hits, names = nvb.phase_bank_hits(smem_layout, access, dtype, instruction)
    return hits, names, report


def plot_banks(
    smem_layout: Layout,
    access,
    dtype: object,
    save_directory: str | os.PathLike,
    name: str = "banks",
    instruction: str = "ld.shared.b32",
    formats: str | Sequence[str] = "png",
    colormap: str | None = None,
    max_phases: int = 256,
) -> list[str]:
    """Heat map of bank hits of ``access`` through ``smem_layout`` (see the module docstring);
    rows are phases (``w<warp> i<instruction> p<phase>``, the first ``max_phases``), columns the 32
    banks; the title carries the report (wavefronts, ideal, ways).  Returns the written paths.

    >>> import tempfile, layoutkit as lk
    >>> from layoutkit.targets import nv
    >>> swz = nv.make_full_bank_swizzled_layout((16, 64), "float16")
    >>> acc = nv.make_mma_store_layout(1, 1, 16, 16).repeat([1, 4], repeat_on_thread=False)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     len(plot_banks(swz, acc, "float16", d, instruction="st.shared.b32"))
    1
    """
    if not isinstance(smem_layout, Layout):
        raise LayoutError(f"plot_banks expects a shared-memory lk.Layout; found {type(smem_layout).__name__}")
    plt = pyplot()
    with plt.rc_context(RC):
        hits, names, report = bank_hits(smem_layout, access, dtype, instruction)
        shown = hits[:max_phases]
        labels = np.where(shown > 0, shown.astype(str), "")
        more = "" if len(names) <= max_phases else f" (first {max_phases} of {len(names)} phases)"
        panel = Panel(shown.astype(float), labels, f"bank hits per phase{more}", xlabel="bank",
                      ylabel="phase (warp, instruction, phase)")
        rows = shown.shape[0]
        labelled = rows * nvb.NUM_BANKS <= LABEL_CELLS
        fig, (ax,), cax = figure(1, rows, nvb.NUM_BANKS, labelled, 2, str(report), colorbar=True, left=1.2)
        top = float(max(8, hits.max()))  # a fixed scale up to 8-way, so conflict-free rows read light
        rgba = rgba_grid(panel, None, colormap or "Reds", vmin=0.0, vmax=top)
        draw_cells(fig, ax, panel, rgba, gid="bank-hits", labelled=labelled)
        step = tick_step(rows, ax.get_position().height * fig.get_size_inches()[1] / max(1, rows))
        ax.set_yticks([r + 0.5 for r in range(0, rows, step)])
        ax.set_yticklabels([names[r] for r in range(0, rows, step)])
        colorbar_for_values(fig, cax, 0.0, top, colormap or "Reds",
                            "distinct words in the bank\n(1: conflict-free; a row's max = its wavefronts)",
                            integer=True)
        return save(fig, save_directory, name, formats)
