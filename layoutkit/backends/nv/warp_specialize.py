"""sm_90 warp specialisation: which pipelined copies are TMA loads, and the producer warp group TileLang puts in
front of the consumers when all of them are.  The backend's thread range (:meth:`.NvBackend.thread_range`) and
the wgmma kernel's choice (:func:`.hopper.uses_hopper`) both read it, so they agree on one rule.

Law: a program with TMA-capable pipelined copies only (:func:`staged_copies`, :func:`tma_capable`) runs
``PRODUCER_THREADS + threads`` threads, the producers first.

>>> from layoutkit.infer import programs
>>> p = programs.gemm(threads=256, target="sm_90")
>>> [tma_capable(p, op) for op in staged_copies(p)], PRODUCER_THREADS
([True, True], 128)
"""

from __future__ import annotations

from ...scopes import GLOBAL
from ...targets.nv.copy import CopyOperand, CopySelectionError, select_copy_instruction

PRODUCER_THREADS = 128
"""Threads of the producer warp group TileLang's warp specialisation adds in front of the consumers
when every pipelined copy is a TMA load (one warp group issues them)."""


def staged_copies(program) -> list:
    """The pipelined global -> shared copies of ``program`` (copies into a staged buffer, from global memory)."""
    return [op for op in program.ops if op.kind == "copy" and op.args["dst"] in program.stages
            and program.buffers[op.args["src"]].scope == GLOBAL]


def tma_capable(program, op) -> bool:
    """Whether a global -> shared copy can be a TMA load (16-byte rows and global strides)."""
    src, dst = (CopyOperand(program.buffers[name].scope, program.buffers[name].dtype, program.buffers[name].shape,
                            tuple(zip(starts, extents)))
                for name, (starts, extents) in ((op.args["src"], op.args["src_region"]),
                                                (op.args["dst"], op.args["dst_region"])))
    try:
        select_copy_instruction(src, dst, program.target, prefer_instruction="tma")
    except CopySelectionError:
        return False
    return True
