"""Figures and text views of layouts: ``plot_layout``, ``plot_buffers``, ``plot_diff``, ``plot_banks``, ``ascii_table``.

matplotlib is optional (``pip install layoutkit[plot]``): it is imported only when a figure is
drawn, always with the Agg backend, no TeX, and SVG text kept as text.  Without it the plot
functions raise :class:`PlotDependencyError` (an :class:`~layoutkit.UnsupportedError`).  The
four-line Shape / Thread / Index / Replicate view of a fragment is :meth:`layoutkit.Fragment.text`.

>>> import layoutkit as lk
>>> from layoutkit.plot import ascii_table
>>> print(ascii_table(lk.Layout([2, 2], lambda i, j: (j, i))))
         0      1
  0  (0,0)  (1,0)
  1  (0,1)  (1,1)
"""

from ._mpl import PlotDependencyError
from .banks import bank_hits, plot_banks
from .diff import difference_mask, plot_diff
from .layout import plot_layout
from .program import buffer_figure, plot_buffers
from .text import ascii_table, cell_text

__all__ = ["PlotDependencyError", "ascii_table", "bank_hits", "buffer_figure", "cell_text", "difference_mask",
           "plot_banks", "plot_buffers", "plot_diff", "plot_layout"]
