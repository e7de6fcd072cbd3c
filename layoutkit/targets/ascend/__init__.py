"""Ascend target: C0 and fractal layouts, CATLASS equivalence, numpy data-movement models.

See :mod:`.layouts` (the TileLang constructors and :func:`fractal_info`), :mod:`.catlass` (the CATLASS
TLA tags and the naming trap) and :mod:`.movement` (ND2NZ, NZ2ND, bursts, fixpipe, OOB fills,
:func:`load_tile`).

>>> from layoutkit.targets import ascend
>>> ascend.c0("float16"), ascend.c0("float32"), ascend.c0("int8")
(16, 8, 32)
"""

from .layouts import (
    ROW_FRACTAL,
    AscendLayout,
    FractalInfo,
    FractalKind,
    FractalTag,
    c0,
    fractal_info,
    make_ascend_compact_nz_layout,
    make_ascend_l0c_layout,
    make_ascend_major_k_layout,
    make_ascend_major_mn_layout,
    make_ascend_nz_layout,
    make_ascend_sf_layout,
    storage_offset_table,
)

__all__ = [
    "ROW_FRACTAL",
    "AscendLayout",
    "FractalInfo",
    "FractalKind",
    "FractalTag",
    "c0",
    "fractal_info",
    "make_ascend_compact_nz_layout",
    "make_ascend_l0c_layout",
    "make_ascend_major_k_layout",
    "make_ascend_major_mn_layout",
    "make_ascend_nz_layout",
    "make_ascend_sf_layout",
    "storage_offset_table",
]
from .catlass import (  # noqa: E402
    KIND_OF_TAG,
    TAG_OF_KIND,
    CatlassMismatchError,
    ascend_layout_from_tag,
    catlass_equivalent,
    catlass_tag,
    tag_of_tla,
    tla_layout,
)

__all__ += [
    "KIND_OF_TAG",
    "TAG_OF_KIND",
    "CatlassMismatchError",
    "ascend_layout_from_tag",
    "catlass_equivalent",
    "catlass_tag",
    "tag_of_tla",
    "tla_layout",
]
