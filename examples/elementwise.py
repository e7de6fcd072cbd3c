"""Elementwise multiply of two 64x64 fp16 tiles through registers on 128 threads."""

from layoutkit import infer


def program(block: int = 64, threads: int = 128) -> infer.Program:
    p = infer.Program(threads=threads, target="sm_80")
    A = p.tensor("A", (1024, 1024), "float16")
    B = p.tensor("B", (1024, 1024), "float16")
    C = p.tensor("C", (1024, 1024), "float16")
    A_f = p.alloc_fragment("A_frag", (block, block), "float16")
    B_f = p.alloc_fragment("B_frag", (block, block), "float16")
    p.copy(A[0:block, 0:block], A_f)
    p.copy(B[0:block, 0:block], B_f)
    p.parallel((block, block), writes=[(A_f, lambda i, j: (i, j))], reads=[(A_f, lambda i, j: (i, j)),
                                                                          (B_f, lambda i, j: (i, j))],
               compute="mul")
    p.copy(A_f, C[0:block, 0:block])
    return p
