"""The TileLang docs GEMM as a layoutkit program: 1024^3 fp16 -> fp32, 128x128x32 tiles, 128 threads.

Run: ``layoutkit infer examples/gemm.py [--plot out/] [--json]``.  The command calls ``program()``, which is
the shared builder :func:`layoutkit.infer.programs.gemm` (the one the tests and benchmarks use): C cleared,
then in a two-stage pipeline (the shared buffers written inside get a stage dim, as in TileLang) the A and B
tiles copied global -> shared and multiplied into the C fragment, and C stored.
"""

from layoutkit.infer import Program, programs


def program(block_m: int = 128, block_n: int = 128, block_k: int = 32, threads: int = 128) -> Program:
    return programs.gemm(M=1024, N=1024, K=1024, bM=block_m, bN=block_n, bK=block_k, threads=threads)
