"""The TileLang docs GEMM as a layoutkit program: 1024^3 fp16 -> fp32, 128x128x32 tiles, 128 threads.

Run: ``layoutkit infer examples/gemm.py [--plot out/] [--json]``.  The command calls ``program()``.
"""

from layoutkit import infer


def program(block_m: int = 128, block_n: int = 128, block_k: int = 32, threads: int = 128) -> infer.Program:
    p = infer.Program(threads=threads, target="sm_80")
    A = p.tensor("A", (1024, 1024), "float16")
    B = p.tensor("B", (1024, 1024), "float16")
    C = p.tensor("C", (1024, 1024), "float16")
    A_s = p.alloc_shared("A_shared", (block_m, block_k), "float16")
    B_s = p.alloc_shared("B_shared", (block_k, block_n), "float16")
    C_l = p.alloc_fragment("C_local", (block_m, block_n), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):  # shared buffers written inside get a stage dim, as in TileLang
        p.copy(A[0:block_m, 0:block_k], A_s)
        p.copy(B[0:block_k, 0:block_n], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(C_l, C[0:block_m, 0:block_n])
    return p
