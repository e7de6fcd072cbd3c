"""GEMM, then ``C += bias[j]`` (a broadcast read) and ``row_max = max_j C`` (a reduction); both stored.

Each block reduces the columns of its own tile, so ``RowMax`` holds the row max of one column tile: with
``N > block`` the blocks of a row band write the same rows (use one column tile, or reduce ``RowMax`` after).
"""

from layoutkit import infer


def program(block: int = 64, threads: int = 128) -> infer.Program:
    p = infer.Program(threads=threads, target="sm_80")
    A = p.tensor("A", (1024, 1024), "float16")
    B = p.tensor("B", (1024, 1024), "float16")
    bias = p.tensor("bias", (1024,), "float32")
    C = p.tensor("C", (1024, 1024), "float16")
    RowMax = p.tensor("RowMax", (1024,), "float32")
    A_s = p.alloc_shared("A_shared", (block, 32), "float16")
    B_s = p.alloc_shared("B_shared", (32, block), "float16")
    C_l = p.alloc_fragment("C_local", (block, block), "float32")
    bias_f = p.alloc_fragment("bias_frag", (block,), "float32")
    row_max = p.alloc_fragment("row_max", (block,), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0:block, 0:32], A_s)
        p.copy(B[0:32, 0:block], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(bias[0:block], bias_f)
    p.parallel((block, block), writes=[(C_l, lambda i, j: (i, j))],
               reads=[(C_l, lambda i, j: (i, j)), (bias_f, lambda i, j: (j,))], compute="add")
    p.reduce(C_l, row_max, dim=1, kind="max", clear=True)
    p.copy(C_l, C[0:block, 0:block])
    p.copy(row_max, RowMax[0:block])
    return p
