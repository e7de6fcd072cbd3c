"""An Ascend GEMM with tails: 250 x 250 x 250 fp16 -> fp32 in 128-element tiles (every tile unrolled).

GM -> L1 -> L0A/L0B -> Cube (MAD) -> L0C -> GM.  ``layoutkit infer examples/ascend_gemm.py`` gives the
fractal layouts (A MajorK = CATLASS zN, B MajorMN = CATLASS nZ, C the L0C layout); the Ascend passes
(`backends.ascend.run_ascend_passes`) then pad to whole fractals and clamp/fill the tail tiles; ``--emit DIR`` writes
the Ascend C kernel: the output tiles spread over ``GetBlockNum()`` AI cores by ``GetBlockIdx()`` (CATLASS's block
swizzle), one tile body whose tails follow the tile's origin extents, the K steps folded into a loop.
"""

from layoutkit.infer import Program, programs


def program(M: int = 250, N: int = 250, K: int = 250, tile: int = 128) -> Program:
    return programs.ascend_gemm(M, N, K, tile, tile, tile)
