"""Ascend target: C0 and fractal layouts, CATLASS equivalence, numpy data-movement models.

See :mod:`.layouts` (the TileLang constructors and :func:`fractal_info`), :mod:`.catlass` (the CATLASS
TLA tags and the naming trap: CATLASS zN == FRACTAL_NZ == ``make_ascend_nz_layout`` (MajorK), CATLASS
nZ == MajorMN) and :mod:`.movement` (ND2NZ, NZ2ND, bursts, UB scatter, L1 -> L0, fixpipe, OOB fills,
:func:`load_tile`).

>>> from layoutkit.targets import ascend
>>> ascend.c0("float16"), ascend.c0("float32"), ascend.c0("int8")
(16, 8, 32)
>>> ascend.catlass_tag(ascend.make_ascend_nz_layout((32, 32), "float16"))
'zN'
"""

from .catlass import (
    KIND_OF_TAG,
    TAG_OF_KIND,
    CatlassMismatchError,
    ascend_layout_from_tag,
    catlass_equivalent,
    catlass_tag,
    tags_of_tla,
    tla_layout,
)
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
    make_ascend_operand_layout,
    make_ascend_sf_layout,
    storage_offset_table,
)
from .movement import (
    BLOCK_BYTES,
    Nd2NzParams,
    burst_copy,
    fixpipe_l0c_to_gm,
    from_storage,
    insert_nd2nz,
    load_l1_to_l0,
    nd2nz,
    nd2nz_matrix,
    nz2nd,
    nz2nd_matrix,
    to_storage,
    ub_scatter_compact_nz,
)
from .padding import Fill, clamp_valid, default_sentinel, load_tile, oob_padding_fills

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
    "make_ascend_operand_layout",
    "make_ascend_sf_layout",
    "storage_offset_table",
    "KIND_OF_TAG",
    "TAG_OF_KIND",
    "CatlassMismatchError",
    "ascend_layout_from_tag",
    "catlass_equivalent",
    "catlass_tag",
    "tags_of_tla",
    "tla_layout",
    "BLOCK_BYTES",
    "Fill",
    "Nd2NzParams",
    "burst_copy",
    "clamp_valid",
    "default_sentinel",
    "fixpipe_l0c_to_gm",
    "from_storage",
    "insert_nd2nz",
    "load_l1_to_l0",
    "load_tile",
    "nd2nz",
    "nd2nz_matrix",
    "nz2nd",
    "nz2nd_matrix",
    "oob_padding_fills",
    "to_storage",
    "ub_scatter_compact_nz",
]
