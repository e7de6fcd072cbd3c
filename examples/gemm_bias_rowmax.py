"""GEMM, then ``C += bias[j]`` (a broadcast read) and ``row_max = max_j C`` (a reduction); both stored.

Each block reduces the columns of its own tile, so ``RowMax`` holds the row max of one column tile: with
``N > block`` the blocks of a row band write the same rows (use one column tile, or reduce ``RowMax`` after).
The program is the shared builder :func:`layoutkit.infer.programs.gemm_rowmax_bias`.
"""

from layoutkit.infer import Program, programs


def program(block: int = 64, threads: int = 128) -> Program:
    return programs.gemm_rowmax_bias(M=1024, N=1024, K=1024, bM=block, bN=block, bK=32, threads=threads,
                                     bias_name="bias")
