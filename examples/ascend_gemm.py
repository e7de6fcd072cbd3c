"""An Ascend GEMM with tails: 250 x 250 x 250 fp16 -> fp32 in 128-element tiles (every tile unrolled).

GM -> L1 -> L0A/L0B -> Cube (MAD) -> L0C -> GM.  ``layoutkit infer examples/ascend_gemm.py`` gives the
fractal layouts (A MajorK = CATLASS zN, B MajorMN = CATLASS nZ, C the L0C layout); the Ascend passes
(`infer.run_ascend_passes`) then pad to whole fractals and clamp/fill the tail tiles; ``--emit DIR`` writes
the Ascend C kernel, with repeated K steps and tiles folded back into loops.
"""

from layoutkit import infer


def program(M: int = 250, N: int = 250, K: int = 250, tile: int = 128) -> infer.Program:
    p = infer.Program(target="ascend")
    A = p.tensor("A", (M, K), "float16")
    B = p.tensor("B", (K, N), "float16")
    C = p.tensor("C", (M, N), "float32")
    a1 = p.alloc("A_l1", (tile, tile), "float16", "l1")
    b1 = p.alloc("B_l1", (tile, tile), "float16", "l1")
    a0 = p.alloc("A_l0", (tile, tile), "float16", "l0a")
    b0 = p.alloc("B_l0", (tile, tile), "float16", "l0b")
    c0 = p.alloc("C_l0", (tile, tile), "float32", "l0c")
    for m in range(0, M, tile):
        for n in range(0, N, tile):
            for k in range(0, K, tile):
                p.copy(A[m:m + tile, k:k + tile], a1)
                p.copy(B[k:k + tile, n:n + tile], b1)
                p.copy(a1, a0)
                p.copy(b1, b0)
                p.mad(a0, b0, c0, clear_accum=k == 0)
            p.copy(c0, C[m:m + tile, n:n + tile])
    return p
