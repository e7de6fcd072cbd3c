"""The Ascend memory scopes of tile-program buffers, defined once for the Ascend backend.

Global memory ``gm``; the cube unit's ``l1`` and ``l0a`` / ``l0b`` / ``l0c`` buffers; the vector unit's
unified buffer ``ub``.  The fractal scopes hold tiles in the cube's fractal (zN / nZ) formats.

>>> ASCEND_SCOPES
('gm', 'ub', 'l1', 'l0a', 'l0b', 'l0c')
>>> FRACTAL_SCOPES
('l1', 'l0a', 'l0b', 'l0c')
"""

GM = "gm"
UB = "ub"
L1 = "l1"
L0A = "l0a"
L0B = "l0b"
L0C = "l0c"

ASCEND_SCOPES = (GM, UB, L1, L0A, L0B, L0C)
FRACTAL_SCOPES = (L1, L0A, L0B, L0C)

__all__ = ["ASCEND_SCOPES", "FRACTAL_SCOPES", "GM", "L0A", "L0B", "L0C", "L1", "UB"]
