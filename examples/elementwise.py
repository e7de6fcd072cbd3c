"""Elementwise multiply of two 64x64 fp16 tiles through registers on 128 threads.

The program is the shared builder :func:`layoutkit.infer.programs.elementwise_binary`.
"""

from layoutkit.infer import Program, programs


def program(block: int = 64, threads: int = 128) -> Program:
    return programs.elementwise_binary(M=1024, N=1024, bM=block, bN=block, threads=threads, compute="mul")
